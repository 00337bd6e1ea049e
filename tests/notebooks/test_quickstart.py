"""notebooks/quickstart.ipynb executes top to bottom (nbclient, a python3 kernel) with
the shortened config (MTRL_QUICKSTART_SHORT=1): install check, training, learning
curve, transcript, best checkpoint sampled, Hugging Face export reloaded."""

import os
import pathlib

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "quickstart.ipynb"


def test_quickstart_notebook_runs(monkeypatch):
    # The kernel inherits this environment: CPU only, the short config, and this
    # checkout's mtrl ahead of any installed copy.
    monkeypatch.setenv("MTRL_QUICKSTART_SHORT", "1")
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    outputs = {i: cell.get("outputs", []) for i, cell in enumerate(notebook.cells)
               if cell.cell_type == "code"}
    text = "\n".join(o.get("text", "") for outs in outputs.values() for o in outs
                     if o.get("output_type") == "stream")
    assert f"mtrl from {ROOT / 'mtrl'}" in text
    assert any("image/png" in o.get("data", {}) for outs in outputs.values() for o in outs)
    assert "transcript 1/" in text
    assert "--- agent 0 (best step" in text and "--- agent 1 (best step" in text
    assert "agent1: ['config.json', 'model.safetensors']" in text
