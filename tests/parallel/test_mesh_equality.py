"""On 8 simulated CPU devices, three train steps of a small model give the same
losses, gradient norms and parameters on meshes (8,1,1), (2,4,1), (2,2,2) as the
single-device code path (and so do LoRA's adapters over a sharded base); greedy
sampling gives identical tokens; every parameter's
`.sharding` is what the rules say; a checkpoint saved on 8 devices restores on 1."""

import re

import numpy as np
import pytest

from mtrl.parallel import partition_spec
from tests.parallel.workers import assert_same_run, params_of, run_worker

MESHES = ("8,1,1", "2,4,1", "2,2,2")
# The trainer's default packing ("tree": packed bins, tree attention) on a mesh too.
PACKED = ("none@tree", "2,2,2@tree")
# LoRA: adapters (replicated: no rule names them) over a base laid out by the rules.
LORA = ("none@lora", "2,2,2@lora")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mesh")
    out = run_worker(tmp / "runs.npz", ("none",) + PACKED + LORA + MESHES, "--sample", "--save",
                     tmp / "ckpt", devices=8)
    return out, tmp / "ckpt"


@pytest.mark.parametrize("mesh", MESHES)
def test_three_steps_match_one_device(results, mesh):
    out, _ = results
    assert_same_run(out, "none", out, mesh)
    assert int(out[f"{mesh}/compiles"]) == 1  # the sharded step compiles once


def test_tree_packed_step_on_a_mesh_matches_one_device(results):
    out, _ = results
    assert_same_run(out, "none@tree", out, "2,2,2@tree")
    assert_same_run(out, "none", out, "none@tree")  # packing changes nothing either


def test_lora_step_on_a_mesh_matches_one_device(results):
    out, _ = results
    assert_same_run(out, "none@lora", out, "2,2,2@lora")
    assert int(out["2,2,2@lora/compiles"]) == 1
    assert all("lora_" in name for name in params_of(out, "2,2,2@lora"))  # adapters trained
    # B = 0 at the start: LoRA's first update sees the full fine-tuning run's loss.
    np.testing.assert_allclose(out["none@lora/losses"][0], out["none/losses"][0], rtol=1e-6)


@pytest.mark.parametrize("mesh", MESHES)
def test_greedy_tokens_identical(results, mesh):
    out, _ = results
    np.testing.assert_array_equal(out[f"{mesh}/greedy"], out["none/greedy"])
    assert out["none/greedy"].shape == (8, 8)


@pytest.mark.parametrize("mesh", MESHES)
def test_parameter_shardings_follow_the_rules(results, mesh):
    out, _ = results
    sizes = dict(zip(("data", "fsdp", "tensor"), map(int, mesh.split(","))))
    prefix = f"{mesh}/spec"
    specs = {k[len(prefix):]: str(v) for k, v in out.items() if k.startswith(prefix)}
    params = params_of(out, mesh)
    assert specs.keys() == params.keys()
    split = 0
    for path, spec in specs.items():
        names = "/".join(re.findall(r"\['([^']+)'\]", path))  # ['a']['b'].value -> a/b
        expected = partition_spec(names, params[path].shape, sizes)
        assert spec == str(expected), path
        split += spec != "PartitionSpec()" and any(a in spec for a in sizes if sizes[a] > 1)
    # (8,1,1) replicates every parameter; the others split most of them.
    assert (split == 0) == (mesh == "8,1,1")


def test_checkpoint_from_8_devices_restores_on_one(results, tmp_path):
    out, ckpt = results
    restored = run_worker(tmp_path / "restored.npz", ("none",), "--restore", ckpt, devices=1)
    final = params_of(out, MESHES[-1])
    got = params_of(restored, "none")
    assert final.keys() == got.keys()
    for name in final:
        np.testing.assert_array_equal(got[name], final[name], err_msg=name)
