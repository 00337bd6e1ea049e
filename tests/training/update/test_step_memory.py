"""The build's memory check: the step tree's size counted by hand, the estimate's
arithmetic, and an unpacked step that cannot fit refused in one line with the numbers
and the knobs (chunked attention: linear in the tokens; xla/reference: plus the
[rows, heads, L, L] scores)."""

import types

import pytest

from mtrl.models import PRESETS
from mtrl.training.update.memory import GB, check_step_memory, step_bytes, step_rows

# math.py's model: the tiny preset cut to 2 layers (hidden 128, intermediate 512, 4 heads).
MODEL = PRESETS.get("tiny").replace(num_layers=2)


def sections(packing="none", minibatches=1, remat="none", num_agents=1, attention="auto",
             tasks_per_step=2, max_context=1024):
    rollout = types.SimpleNamespace(num_generations=4, num_turns=3, num_agents=num_agents,
                                    joint_mode="align", max_nodes_per_turn=4096,
                                    max_context=max_context)
    train = types.SimpleNamespace(tasks_per_step=tasks_per_step, minibatches=minibatches,
                                  remat=remat, packing=packing)
    return rollout, train, MODEL.replace(attention=attention)


def test_rows_of_a_step_tree_counted_by_hand():
    assert step_rows(2, 4, 3, 1, "align", 4096) == 4 * (2 + 8 + 32)  # math.py: 168
    assert step_rows(1, 2, 2, 2, "cross", 4096) == 2 * (1 + 4)  # J = G^N = 4
    assert step_rows(2, 4, 3, 1, "align", 10) == 4 * (2 + 8 + 10)  # nodes capped per turn


def test_estimate_by_hand():
    # 168 rows -> 256 padded x 1024 tokens x 2 agents, 4 B x 640 x (6.7 x 2 + 6.5).
    tokens = 2 * 256 * 1024
    assert step_bytes(168, 2, 1, 1024, MODEL, 2, chunked=True) == pytest.approx(
        tokens * 4 * 640 * (6.7 * 2 + 6.5))
    # Unchunked adds 5.5 x 2 layers x 2 agents x 256 rows x 4 heads x 1024^2 x 4 B.
    scores = 5.5 * 2 * 2 * 256 * 4 * 1024 ** 2 * 4
    assert step_bytes(168, 2, 1, 1024, MODEL, 2, chunked=False) == pytest.approx(
        tokens * 4 * 640 * (6.7 * 2 + 6.5) + scores)


def test_an_unpacked_step_that_cannot_fit_is_refused_in_one_line_with_the_knobs():
    # math.py, two agents, packing=none, chunked: 2 x 256 x 1024 tokens ~ 26.7 GB.
    with pytest.raises(ValueError) as refused:
        check_step_memory(*sections(num_agents=2), available=24 * GB, backend="cpu")
    message = str(refused.value)
    assert "\n" not in message and "168 rows per agent x 2 agents" in message
    assert "chunked attention; ~26.7 GB unpacked of 24.0 GB: cannot fit" in message
    for knob in ("train.packing=tree", "train.minibatches", "train.remat=full",
                 "rollout.num_generations", "rollout.max_context", "train.tasks_per_step"):
        assert knob in message
    assert "model attention" not in message  # already chunked
    # Half the rows per minibatch, or full remat, fit.
    assert "~13.4 GB unpacked" in check_step_memory(*sections(num_agents=2, minibatches=2),
                                                    available=24 * GB, backend="cpu")
    assert check_step_memory(*sections(num_agents=2, remat="full"), available=24 * GB,
                             backend="cpu")


def test_unchunked_attention_adds_the_scores_and_names_the_attention_knob():
    # One agent, attention "xla": 13.4 GB of tokens + 47.2 GB of scores (XLA asked 45.8).
    with pytest.raises(ValueError, match=r"xla attention; ~60\.6 GB unpacked of 24\.0 GB: "
                                         r"cannot fit; .*model attention 'chunked'"):
        check_step_memory(*sections(attention="xla"), available=24 * GB, backend="cpu")
    # The same step chunked fits.
    assert "~13.4 GB unpacked" in check_step_memory(*sections(), available=24 * GB,
                                                    backend="cpu")


def test_a_packed_step_is_reported_not_refused():
    """Its tokens depend on what the policy writes: the no-sharing bound is printed."""
    line = check_step_memory(*sections(packing="tree", num_agents=2, tasks_per_step=8),
                             available=24 * GB, backend="cpu")
    assert "at most, if no prefix were shared (train.packing=tree" in line


def test_a_packed_minibatch_is_checked_by_its_bins():
    from mtrl.training.update.memory import packed_step_guard
    _, train, model = sections(packing="tree", num_agents=2)
    assert packed_step_guard(*sections()[1:2], model, 2) is None  # unpacked: the build checks
    guard = packed_step_guard(train, model, 2, available=24 * GB, backend="cpu")
    # 2 agents x 240 bins x 1024 slots, 4 B x 640 x (6.7 x 2 + 6.5) per token: ~25.0 GB.
    assert 2 * 240 * 1024 * 4 * 640 * (6.7 * 2 + 6.5) == pytest.approx(25.04e9, rel=1e-3)
    with pytest.raises(ValueError) as refused:
        guard(240, 1024)
    message = str(refused.value)
    assert "\n" not in message and "2 agents x 240 bins of 1024 tokens (tree packing)" in message
    assert "~25.0 GB of 24.0 GB: cannot fit" in message and "train.minibatches" in message
    guard(120, 1024)  # half the bins fit: ~12.5 GB
    _, _, xla = sections(packing="tree", num_agents=2, attention="xla")
    # 24 bins: 2.5 GB of tokens, plus 5.5 x 2 layers x 2 agents x 24 bins x 4 heads x
    # 1024^2 x 4 B = 8.9 GB of scores.
    with pytest.raises(ValueError, match="xla attention, needs ~11.4 GB of 10.0 GB"):
        packed_step_guard(train, xla, 2, available=10 * GB, backend="cpu")(24, 1024)
