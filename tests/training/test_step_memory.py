"""The build's memory check: the step tree's size counted by hand, and an unpacked
step that cannot fit refused in one line with the numbers and the knobs."""

import types

import pytest

from mtrl.training.memory import GB, check_step_memory, step_rows


def sections(packing="none", minibatches=1, remat="none", num_agents=1):
    rollout = types.SimpleNamespace(num_generations=4, num_turns=3, num_agents=num_agents,
                                    joint_mode="align", max_nodes_per_turn=4096,
                                    max_context=1024)
    train = types.SimpleNamespace(tasks_per_step=2, minibatches=minibatches, remat=remat,
                                  packing=packing)
    model = types.SimpleNamespace(num_layers=2, num_heads=4)
    return rollout, train, model


def test_rows_of_a_step_tree_counted_by_hand():
    assert step_rows(2, 4, 3, 1, "align", 4096) == 4 * (2 + 8 + 32)  # math.py: 168
    assert step_rows(1, 2, 2, 2, "cross", 4096) == 2 * (1 + 4)  # J = G^N = 4
    assert step_rows(2, 4, 3, 1, "align", 10) == 4 * (2 + 8 + 10)  # nodes capped per turn


def test_an_unpacked_step_that_cannot_fit_is_refused_in_one_line_with_the_knobs():
    # math.py, one agent, packing=none: XLA asked for 45.8 GB; the estimate is
    # 5.5 buffers x 2 layers x 256 padded rows x 4 heads x 1024^2 x 4 B = 47.2 GB.
    with pytest.raises(ValueError) as refused:
        check_step_memory(*sections(), available=24 * GB)
    message = str(refused.value)
    assert "\n" not in message and "168 rows per agent" in message
    assert "~47.2 GB of 24.0 GB" in message
    assert "train.packing=tree" in message and "train.minibatches" in message
    # The same tree packed is only reported (its memory depends on the real lengths),
    # and unpacked with one layer kept and 4 minibatches it fits.
    assert "~47.2 GB" in check_step_memory(*sections(packing="tree"), available=24 * GB)
    assert "~5.9 GB" in check_step_memory(*sections(minibatches=4, remat="full"),
                                         available=24 * GB)
