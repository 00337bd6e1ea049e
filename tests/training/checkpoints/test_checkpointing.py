"""CheckpointKeeper: exact round trips, best-k plus latest retention, and a run
SIGKILLed mid-save that resumes exactly."""

import functools
import json
import os
import pathlib
import signal
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from mtrl.training.checkpoints.checkpointing import CheckpointKeeper, abstract_like

_ROOT = pathlib.Path(__file__).resolve().parents[3]
_OPTIMIZER = optax.adamw(1e-2)


@functools.partial(jax.jit, static_argnums=0)
def _train_state(seed: int = 0):
    """Parameters for two agents, an AdamW state after one update, and RNG keys.
    Jitted: one compilation instead of one per eager op keeps the test fast."""
    key = jax.random.key(seed)
    params = {
        "agent0": {"w": jax.random.normal(key, (3, 4)), "b": jnp.zeros((4,))},
        "agent1": {"w": jnp.arange(6.0).reshape(2, 3)},
    }
    opt_state = _OPTIMIZER.init(params)
    grads = jax.tree.map(lambda p: jnp.ones_like(p) * 0.5, params)
    _, opt_state = _OPTIMIZER.update(grads, opt_state, params)
    return {
        "params": params,
        "opt_state": opt_state,
        "rng": jax.random.fold_in(key, 7),  # typed key, threefry
        "rng_rbg": jax.random.key(3, impl="rbg"),  # typed key, another impl
        "raw_rng": jax.random.PRNGKey(11),  # legacy uint32 key
        "step_count": jnp.asarray(5, jnp.int32),
    }


def _as_comparable(leaf):
    if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        return ("key", str(jax.random.key_impl(leaf)), np.asarray(jax.random.key_data(leaf)))
    return ("array", str(leaf.dtype), np.asarray(leaf))


def _assert_same_state(actual, expected):
    assert jax.tree.structure(actual) == jax.tree.structure(expected)
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected)):
        kind_a, dtype_a, value_a = _as_comparable(a)
        kind_e, dtype_e, value_e = _as_comparable(e)
        assert (kind_a, dtype_a) == (kind_e, dtype_e)
        np.testing.assert_array_equal(value_a, value_e)


def test_round_trip_is_exact_with_optax_state_and_typed_keys(tmp_path):
    state = _train_state()
    extra = {"data_position": 123, "curriculum": {"level": 2}, "config": {"lr": 0.01}}
    with CheckpointKeeper(tmp_path / "ckpt") as keeper:
        keeper.save_latest(10, state, extra)
        keeper.wait()
        step, restored, restored_extra = keeper.restore("latest", target=state)
    assert step == 10
    assert restored_extra == extra
    _assert_same_state(restored, state)
    # The restored optimizer state is usable: one more update matches the original's,
    # and randomness continues identically from the restored key.
    @jax.jit
    def next_step(state):
        grads = jax.tree.map(jnp.ones_like, state["params"])
        updates, _ = _OPTIMIZER.update(grads, state["opt_state"], state["params"])
        return updates, jax.random.uniform(state["rng"], (4,))

    _assert_same_state(next_step(restored), next_step(state))


def test_restore_from_abstract_target_and_without_target(tmp_path):
    state = _train_state()
    keeper = CheckpointKeeper(tmp_path, async_save=False)
    keeper.save_latest(3, state)
    abstract = jax.eval_shape(lambda: state)
    _, restored, _ = keeper.restore("latest", target=abstract)
    _assert_same_state(restored, state)
    # Without a target: plain containers, but typed keys at dict paths come back typed.
    _, loose, _ = keeper.restore(3)
    np.testing.assert_array_equal(jax.random.key_data(loose["rng"]),
                                  jax.random.key_data(state["rng"]))
    np.testing.assert_array_equal(loose["raw_rng"], state["raw_rng"])
    keeper.close()


def test_abstract_like_holds_no_arrays_and_restores_exactly(tmp_path):
    state = _train_state()
    layout = abstract_like({**state, "note": "kept"})
    leaves = jax.tree.leaves(layout)
    assert all(isinstance(x, (jax.ShapeDtypeStruct, str)) for x in leaves)
    assert layout["note"] == "kept" and layout["rng"].dtype == state["rng"].dtype
    assert layout["params"]["agent0"]["w"].sharding == state["params"]["agent0"]["w"].sharding
    keeper = CheckpointKeeper(tmp_path, async_save=False)
    keeper.save_latest(3, state)
    del layout["note"]
    _, restored, _ = keeper.restore("latest", target=layout)
    _assert_same_state(restored, state)
    keeper.close()


def test_async_save_copies_arrays_before_returning(tmp_path):
    # A jitted step that donates the state may reuse its buffers right after save().
    keeper = CheckpointKeeper(tmp_path)
    weights = jnp.arange(100_000.0)
    keeper.save_latest(1, {"w": weights})
    weights.delete()
    keeper.wait()
    _, state, _ = keeper.restore(1, target={"w": jax.ShapeDtypeStruct((100_000,), jnp.float32)})
    np.testing.assert_array_equal(state["w"], np.arange(100_000.0))
    keeper.close()


def test_best_k_retention_keeps_highest_metric_plus_latest(tmp_path):
    state = {"w": jnp.zeros((2,))}
    keeper = CheckpointKeeper(tmp_path, keep_best=2, metric="heldout_success")
    schedule = [(1, 0.30), (2, None), (3, 0.70), (4, 0.10), (5, None), (6, 0.50),
                (7, 0.20), (8, None)]
    for step, success in schedule:
        state = {"w": jnp.full((2,), float(step))}
        if success is None:
            keeper.save_latest(step, state, {"step": step})
        else:
            keeper.save_eval(step, state, {"heldout_success": success, "reward": 1.0},
                             {"step": step})
    keeper.wait()
    # Best two by success are steps 3 (0.7) and 6 (0.5); latest is 8.
    assert keeper.all_steps() == (3, 6, 8)
    assert keeper.best_step() == 3 and keeper.latest_step() == 8
    assert keeper.best_metric() == pytest.approx(0.70)
    step, best_state, extra = keeper.restore("best", target=state)
    assert step == 3 and extra == {"step": 3}
    np.testing.assert_array_equal(best_state["w"], [3.0, 3.0])
    # An evaluated latest step outside the top k survives only until the next save.
    keeper.save_eval(9, state, {"heldout_success": 0.05})
    keeper.wait()
    assert keeper.all_steps() == (3, 6, 9)
    keeper.save_latest(10, state)
    keeper.wait()
    assert keeper.all_steps() == (3, 6, 10)
    keeper.close()
    # Metrics persist: a new keeper on the same directory ranks the same way.
    reopened = CheckpointKeeper(tmp_path, keep_best=2)
    assert reopened.best_step() == 3 and reopened.latest_step() == 10
    assert reopened.metrics(6) == {"heldout_success": 0.5, "reward": 1.0}
    assert reopened.metrics(10) is None
    assert not any((tmp_path / "_trash").iterdir())  # deleted steps were purged
    reopened.close()


def test_min_mode_ties_and_validation(tmp_path):
    state = {"w": jnp.zeros(())}
    keeper = CheckpointKeeper(tmp_path, keep_best=1, metric="loss", mode="min",
                              async_save=False)
    keeper.save_eval(1, state, {"loss": 2.0})
    keeper.save_eval(2, state, {"loss": 1.0})
    keeper.save_eval(3, state, {"loss": 1.0})  # tie: the later step wins
    keeper.save_eval(4, state, {"loss": 3.0})
    assert keeper.best_step() == 3
    assert keeper.all_steps() == (3, 4)
    assert keeper.save_latest(4, state) is False  # already saved at this step
    with pytest.raises(ValueError, match="must contain 'loss'"):
        keeper.save_eval(5, state, {"other": 1.0})
    with pytest.raises(ValueError, match="finite"):
        keeper.save_eval(5, state, {"loss": float("nan")})
    keeper.save_latest(6, state)
    with pytest.raises(ValueError, match="already saved"):
        keeper.save_eval(6, state, {"loss": 0.5})
    with pytest.raises(FileNotFoundError):
        keeper.restore(5)
    keeper.close()
    with pytest.raises(ValueError, match="keep_best"):
        CheckpointKeeper(tmp_path / "x", keep_best=0)


def test_run_killed_mid_save_resumes_with_the_same_metrics(tmp_path):
    """SIGKILL while step 8 is being saved: steps up to 6 survive intact, step 8 is
    never seen, and the resumed run logs exactly what an uninterrupted run logs."""
    from tests.training.toy_run import run

    steps = 10
    run(tmp_path / "straight", steps)
    killed = tmp_path / "killed"
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(_ROOT))
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.training.toy_run", str(killed), "--steps", str(steps),
         "--hang-at", "8"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env=env, cwd=_ROOT)
    try:
        for line in process.stdout:
            if line.startswith("HANGING"):
                break
        else:
            pytest.fail(f"toy run exited (rc={process.wait()}) before saving step 8")
        # Every file of step 8 is written, but only under its temporary name.
        checkpoints = killed / "checkpoints"
        assert any(p.name.startswith("8.") and "tmp" in p.name for p in checkpoints.iterdir())
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == -signal.SIGKILL
    logged = [json.loads(line)["step"] for line in
              (killed / "metrics.jsonl").read_text().splitlines()]
    assert logged[-1] >= 7  # the run got past its last committed save (step 6)

    keeper = CheckpointKeeper(checkpoints, keep_best=2)
    assert keeper.latest_step() == 6 and keeper.all_steps() == (4, 6)
    keeper.close()
    run(killed, steps)  # resumes from step 6
    straight = (tmp_path / "straight" / "metrics.jsonl").read_text()
    assert (killed / "metrics.jsonl").read_text() == straight  # bit-identical floats
    assert len(straight.splitlines()) == steps
    resumed = CheckpointKeeper(checkpoints, keep_best=2)
    reference = CheckpointKeeper(tmp_path / "straight" / "checkpoints", keep_best=2)
    assert resumed.all_steps() == reference.all_steps()
    assert resumed.best_step() == reference.best_step()
    assert not [p for p in checkpoints.iterdir() if "tmp" in p.name]
    resumed.close()
    reference.close()
