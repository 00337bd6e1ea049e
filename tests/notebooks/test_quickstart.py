"""notebooks/quickstart.ipynb executes top to bottom where a researcher opens it: in a
fresh virtual environment that does not have mtrl, whose first cell installs mtrl
from the checkout (MTRL_SOURCE) with pip, then trains (MTRL_QUICKSTART_SHORT=1), draws
the learning curve, shows a transcript, samples the best checkpoint and reloads its
Hugging Face export.

The fresh environment: a new venv whose site-packages links every entry of this
interpreter's site-packages except mtrl's own (its dist-info and its editable-install
hooks), so the heavy dependencies (jax, transformers, ...) are there, as on a machine
that has them, and pip's install of mtrl resolves them without downloading, while
mtrl itself is not importable until the notebook's pip install (checked first). The
kernel runs on the new venv's python, from a folder outside the checkout."""

import os
import pathlib
import re
import site
import subprocess
import sys
import time

import pytest

pytest.importorskip("nbclient")
pytest.importorskip("nbformat")

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "quickstart.ipynb"

RUN = """
import sys, nbclient, nbformat
notebook = nbformat.read(sys.argv[1], as_version=4)
client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                 resources={"metadata": {"path": sys.argv[2]}})
client.execute()
nbformat.write(notebook, sys.argv[3])
"""


def is_mtrls(name: str) -> bool:
    """mtrl's own entries in a site-packages (metadata and editable-install hooks)."""
    lower = name.lower()
    return lower.startswith(("mtrl-", "mtrl.", "__editable__.mtrl", "__editable___mtrl")) \
        or lower == "mtrl"


def fresh_venv(folder: pathlib.Path) -> pathlib.Path:
    """A venv with this interpreter's packages but not mtrl (module doc); its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    target = pathlib.Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip())
    for source in map(pathlib.Path, site.getsitepackages()):
        for entry in source.iterdir():
            if not is_mtrls(entry.name) and not (target / entry.name).exists():
                (target / entry.name).symlink_to(entry)
    return python


def test_quickstart_notebook_installs_mtrl_and_runs_in_a_fresh_venv(tmp_path):
    python = fresh_venv(tmp_path / "venv")
    work = tmp_path / "work"  # the kernel's folder: no checkout here
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(MTRL_QUICKSTART_SHORT="1", JAX_PLATFORMS="cpu", MTRL_SOURCE=str(ROOT),
               PIP_NO_BUILD_ISOLATION="false")  # pip's spelling of --no-build-isolation
    probe = subprocess.run([str(python), "-c", "import importlib.util, importlib.metadata as m;"
                            "print(importlib.util.find_spec('mtrl'));"
                            "print([d.name for d in m.distributions() if d.name == 'mtrl'])"],
                           cwd=work, env=env, capture_output=True, text=True, check=True)
    assert probe.stdout.split() == ["None", "[]"], probe.stdout  # mtrl is not installed
    executed = tmp_path / "executed.ipynb"
    started = time.perf_counter()
    done = subprocess.run([str(python), "-c", RUN, str(NOTEBOOK), str(work), str(executed)],
                          cwd=work, env=env, capture_output=True, text=True, timeout=900)
    print(f"notebook in a fresh venv: {time.perf_counter() - started:.0f} s")
    assert done.returncode == 0, done.stderr[-3000:]
    import nbformat
    notebook = nbformat.read(executed, as_version=4)
    install = next(c for c in notebook.cells if c.cell_type == "code").metadata["execution"]
    print("the install cell:", install["shell.execute_reply"], "-",
          install["iopub.execute_input"])
    outputs = [o for cell in notebook.cells if cell.cell_type == "code"
               for o in cell.get("outputs", [])]
    text = "\n".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert f"installing mtrl from {ROOT} (pip install -e" in text
    assert f"mtrl 0.1.0 from {ROOT / 'mtrl'}" in text
    assert list((tmp_path / "venv").glob("lib/python*/site-packages/mtrl-0.1.0.dist-info"))
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert "transcript 1/" in text
    updates = re.search(r"RL updates run: (\d+) of (\d+) steps", text)
    assert updates and int(updates.group(1)) >= 1, text[-2000:]  # RL ran, not only SFT
    assert "--- agent 0 (best step" in text and "--- agent 1 (best step" in text
    assert "agent1: ['config.json', 'model.safetensors']" in text
