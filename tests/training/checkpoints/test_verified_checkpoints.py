"""Checkpoints are verified before they are trusted: checksums written at save and
checked at restore for RL and SFT checkpoints and exported Hugging Face weights. A
corrupt one (64 bytes overwritten, which orbax and safetensors load silently) is
refused in one line naming it, and resuming falls back to the previous whole one. The
damaged file is the largest array data file, never the manifest itself (a damaged
manifest has its own test)."""

import pathlib
import shutil

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.checksums import MANIFEST
from mtrl.models import PRESETS, Transformer, load_hf_checkpoint
from mtrl.tokenizers import load_tokenizer
from mtrl.training.checkpoints.checkpointing import (CheckpointError, CheckpointKeeper,
                                                     CorruptCheckpoint)
from mtrl.training.checkpoints.hf_export import export_hf_directory
from mtrl.training.sft.sft import SFTProgress
from mtrl.training.sft.sft_checkpoint import SFTCheckpoints


def corrupt_middle(path: pathlib.Path) -> pathlib.Path:
    """Overwrites 64 bytes in the middle of `path`; returns it."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = bytes((b + 1) % 256 for b in data[middle:middle + 64])
    path.write_bytes(bytes(data))
    return path


def corrupt_largest_file(directory: pathlib.Path) -> pathlib.Path:
    """Corrupts the largest file under `directory` other than the checksum manifests
    (with a state of random weights, that is array data)."""
    largest = max((p for p in directory.rglob("*")
                    if p.is_file() and not p.name.startswith(MANIFEST)),
                  key=lambda p: p.stat().st_size)
    return corrupt_middle(largest)


def state(value: float):
    """"w" filled with `value`, and "noise" (random, seeded by `value`) so that array
    data, which orbax compresses, outweighs the metadata beside it."""
    noise = np.random.default_rng(int(value * 10)).normal(size=(64, 64))
    return {"w": jnp.full((64, 64), value, jnp.float32), "b": jnp.arange(8.0) + value,
            "noise": jnp.asarray(noise, jnp.float32)}


def test_a_corrupt_rl_checkpoint_is_refused_in_one_line_naming_it(tmp_path):
    with CheckpointKeeper(tmp_path / "checkpoints") as keeper:
        keeper.save_eval(1, state(1.0), {"heldout_success": 0.5}, {"step": 1})
        keeper.save_latest(2, state(2.0), {"step": 2})
    bad = corrupt_largest_file(tmp_path / "checkpoints" / "2")
    assert bad.parts[-3:-1] == ("ocdbt.process_0", "d")  # array data
    with CheckpointKeeper(tmp_path / "checkpoints") as keeper:
        with pytest.raises(CorruptCheckpoint) as refused:
            keeper.restore(2, target=state(0.0))
        message = str(refused.value)
        assert "\n" not in message and str(bad) in message and "(the file is corrupt)" in message
        assert str(tmp_path / "checkpoints" / "2") in message
        np.testing.assert_array_equal(keeper.restore(1, target=state(0.0)).state["w"], 1.0)


@pytest.mark.parametrize("damage", ["middle", "one_digest_digit"])
def test_a_damaged_manifest_is_refused_naming_the_manifest(tmp_path, damage):
    # Damage inside checksums.sha256 used to blame a listed file, or one that exists
    # nowhere, when it fell on a name or a digest; its guard file names the manifest.
    with CheckpointKeeper(tmp_path / "checkpoints") as keeper:
        keeper.save_latest(2, state(2.0), {"step": 2})
    manifest = tmp_path / "checkpoints" / "2" / MANIFEST
    if damage == "middle":
        corrupt_middle(manifest)
    else:  # one changed hex digit of the last digest listed: still a well-formed line
        text = manifest.read_text().splitlines(keepends=True)
        digit = "0" if text[-1][0] != "0" else "1"
        manifest.write_text("".join(text[:-1]) + digit + text[-1][1:])
    with CheckpointKeeper(tmp_path / "checkpoints") as keeper:
        with pytest.raises(CorruptCheckpoint) as refused:
            keeper.restore(2, target=state(0.0))
    message = str(refused.value)
    assert "\n" not in message and f"{manifest} does not match" in message
    assert "(the manifest is corrupt)" in message


def test_resume_falls_back_to_the_previous_whole_checkpoint_saying_so(tmp_path):
    with CheckpointKeeper(tmp_path / "checkpoints") as keeper:
        keeper.save_eval(1, state(1.0), {"heldout_success": 0.5}, {"step": 1})
        keeper.save_latest(2, state(2.0), {"step": 2})
    corrupt_largest_file(tmp_path / "checkpoints" / "2")
    said = []
    with CheckpointKeeper(tmp_path / "checkpoints") as keeper:
        restored = keeper.restore_newest_whole(target=state(0.0), say=said.append)
        assert restored.step == 1 and restored.extra == {"step": 1}
        np.testing.assert_array_equal(restored.state["w"], 1.0)
        assert keeper.all_steps() == (1,)  # the corrupt step is out of the way
        keeper.save_latest(2, state(3.0), {"step": 2})  # and its number can be saved again
    assert len(said) == 1 and "step 2" in said[0] and "falling back to step 1" in said[0]
    assert (tmp_path / "checkpoints" / "_corrupt" / "2").is_dir()  # kept to look at


def test_a_corrupt_sft_checkpoint_starts_sft_over_saying_so(tmp_path, capsys):
    log = tmp_path / "sft.jsonl"
    log.write_text('{"step": 1}\n')
    checkpoints = SFTCheckpoints(tmp_path / "sft_checkpoints", log)
    params = [state(1.0)]
    checkpoints.save(10, 0, 0, params, SFTProgress(10, params[0], {"m": jnp.zeros(3)},
                                                   jnp.zeros(())), seconds=1.0)
    checkpoints.close()
    corrupt_largest_file(tmp_path / "sft_checkpoints" / "10")
    again = SFTCheckpoints(tmp_path / "sft_checkpoints", log)
    position, seconds = again.restore([state(0.0)], {"m": jnp.zeros(3)})
    again.close()
    assert position is None and seconds == 0.0
    assert log.read_text() == ""  # its lines belong to the SFT that is redone
    assert "corrupt" in capsys.readouterr().out


def test_a_corrupt_exported_safetensors_file_is_refused_in_one_line(tmp_path):
    model = Transformer(PRESETS.get("tiny").replace(vocab_size=300), rngs=nnx.Rngs(0))
    out = export_hf_directory(model, load_tokenizer("byte"), tmp_path / "agent0")
    load_hf_checkpoint(out)  # verified and loaded
    bad = corrupt_largest_file(out)
    assert bad.suffix == ".safetensors"
    with pytest.raises(ValueError) as refused:
        load_hf_checkpoint(out)
    message = str(refused.value)
    assert "\n" not in message and str(bad) in message


def test_an_unreadable_checkpoint_is_reported_in_one_line_with_what_to_do(tmp_path):
    with CheckpointKeeper(tmp_path / "checkpoints") as keeper:
        keeper.save_latest(3, state(1.0), {"step": 3})
    step = tmp_path / "checkpoints" / "3"
    (step / "checksums.sha256").unlink()  # e.g. saved by an mtrl without checksums
    shutil.rmtree(step / "state")
    with CheckpointKeeper(tmp_path / "checkpoints") as keeper:
        with pytest.raises(CheckpointError) as refused:
            keeper.restore_newest_whole(target=state(0.0))
    message = str(refused.value)
    assert "\n" not in message and str(step) in message and "--workdir" in message


def test_a_step_without_checksums_is_restored_saying_it_is_unverified(tmp_path):
    with CheckpointKeeper(tmp_path / "checkpoints") as keeper:
        keeper.save_latest(4, state(4.0), {"step": 4})
    step = tmp_path / "checkpoints" / "4"
    (step / MANIFEST).unlink()  # killed between the save and the checksums
    said = []
    with CheckpointKeeper(tmp_path / "checkpoints") as keeper:
        restored = keeper.restore_newest_whole(target=state(0.0), say=said.append)
    assert restored.step == 4
    assert said == [f"checkpoint {step} has no {MANIFEST} (the run stopped before "
                    "writing it): restored unverified"]


def test_the_last_corrupt_step_says_what_starts_over(tmp_path):
    with CheckpointKeeper(tmp_path / "checkpoints") as keeper:
        keeper.save_latest(2, state(2.0), {"step": 2})
    corrupt_largest_file(tmp_path / "checkpoints" / "2")
    said = []
    with CheckpointKeeper(tmp_path / "checkpoints") as keeper:
        assert keeper.restore_newest_whole(target=state(0.0), say=said.append,
                                           none_left="RL starts over") is None
    assert len(said) == 1 and said[0].endswith("; RL starts over"), said
    from mtrl.training.loop.trainer import RL_NONE_LEFT
    assert "RL starts over" in RL_NONE_LEFT and "SFT resumes" in RL_NONE_LEFT
