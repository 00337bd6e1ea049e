"""The build's memory check: the step tree's size and the attention it keeps, counted
by hand, and a configuration that cannot fit refused in one line with the knobs."""

import types

import pytest

from mtrl.training.memory import GB, check_step_memory, step_rows


def sections(num_agents=2, minibatches=1, remat="none"):
    rollout = types.SimpleNamespace(num_generations=4, num_turns=3, num_agents=num_agents,
                                    joint_mode="align", max_nodes_per_turn=4096,
                                    max_context=1024)
    train = types.SimpleNamespace(tasks_per_step=2, minibatches=minibatches, remat=remat)
    model = types.SimpleNamespace(num_layers=2, num_heads=4)
    return rollout, train, model


def test_rows_of_a_step_tree_counted_by_hand():
    assert step_rows(2, 4, 3, 1, "align", 4096) == 2 * 4 * (1 + 4 + 16)  # math.py: 168
    assert step_rows(1, 2, 2, 2, "cross", 4096) == 2 * (1 + 4)  # J = G^N = 4
    assert step_rows(2, 4, 3, 1, "align", 10) == 4 * (2 + 8 + 10)  # nodes capped per turn


def test_a_config_that_cannot_fit_is_refused_in_one_line_with_the_knobs():
    # math.py with two agents: scores and probabilities x 2 layers x 2 agents x 168 rows
    # x 4 heads x 1024^2 x 4 B = 22.5 GB.
    need = 2 * 2 * 2 * 168 * 4 * 1024 ** 2 * 4
    with pytest.raises(ValueError) as refused:
        check_step_memory(*sections(), available=16 * GB)
    message = str(refused.value)
    assert "\n" not in message and f"{need / GB:.1f} GB" in message and "16.0 GB" in message
    assert "train.minibatches" in message and "train.remat=full" in message
    # Halved by remat (one layer kept), halved again by two minibatches: it fits.
    line = check_step_memory(*sections(minibatches=2, remat="full"), available=16 * GB)
    assert f"{need / 4 / GB:.1f} GB" in line
