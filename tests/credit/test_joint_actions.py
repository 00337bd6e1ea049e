import itertools

import jax
import numpy as np
import pytest

from tests.credit.jitted import jitted
from mtrl.credit import (JOINT_ACTION_MODES, joint_action_index, num_joint_actions,
                         per_agent_credit)


def test_modes_registered():
    assert JOINT_ACTION_MODES.names() == ("align", "cross")
    with pytest.raises(KeyError, match="joint-action mode must be one of align, cross"):
        joint_action_index("zip", 2, 2)


def test_align_index():
    index = joint_action_index("align", 3, 4)
    assert index.dtype == np.int32 and index.shape == (4, 3)
    np.testing.assert_array_equal(index, np.repeat(np.arange(4)[:, None], 3, axis=1))


def test_cross_index_is_row_major_with_agent_one_most_significant():
    index = joint_action_index("cross", 2, 3)
    assert index.dtype == np.int32
    np.testing.assert_array_equal(index, list(itertools.product(range(3), repeat=2)))
    three = joint_action_index("cross", 3, 2)
    assert three[5].tolist() == [1, 0, 1]  # 5 = 1·4 + 0·2 + 1
    np.testing.assert_array_equal(three, list(itertools.product(range(2), repeat=3)))


def test_num_joint_actions():
    assert num_joint_actions("align", 2, 4) == 4
    assert num_joint_actions("cross", 2, 4) == 16
    assert num_joint_actions("cross", 1, 5) == 5


def test_align_credit_is_the_joint_value_for_every_agent():
    values = np.array([[1.0, -1.0, 0.0, 0.0]], np.float32)
    credit = jitted(per_agent_credit, values, mode="align", num_agents=2, num_generations=4)
    assert credit.shape == (1, 2, 4)
    np.testing.assert_allclose(credit[0], [[1, -1, 0, 0], [1, -1, 0, 0]])
    mean = jitted(per_agent_credit, values, mode="align", num_agents=2, num_generations=4,
                  reduce="mean")
    np.testing.assert_allclose(mean, credit)


def test_cross_credit_matches_reshape_reference():
    agents, gens = 3, 2
    values = np.random.default_rng(0).normal(size=(5, gens ** agents)).astype(np.float32)
    grid = values.reshape((5,) + (gens,) * agents)
    for reduce, op in (("sum", np.sum), ("mean", np.mean)):
        credit = np.asarray(jitted(per_agent_credit, values, mode="cross", num_agents=agents,
                                   num_generations=gens, reduce=reduce))
        for a in range(agents):
            others = tuple(1 + b for b in range(agents) if b != a)
            np.testing.assert_allclose(credit[:, a], op(grid, axis=others), rtol=1e-5,
                                       atol=1e-6)


def test_cross_credit_hand_example():
    # N = 2, G = 2: joints (0,0)=1, (0,1)=2, (1,0)=3, (1,1)=4.
    values = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    both = jax.jit(lambda v: (per_agent_credit(v, "cross", 2, 2),
                              per_agent_credit(v, "cross", 2, 2, reduce="mean")))
    credit, mean = both(values)
    np.testing.assert_allclose(credit, [[3, 7], [4, 6]])
    np.testing.assert_allclose(mean, [[1.5, 3.5], [2, 3]])


def test_credit_under_vmap_matches_batched_call():
    values = np.random.default_rng(1).normal(size=(3, 4, 9)).astype(np.float32)
    credit = jax.jit(lambda v: (jax.vmap(lambda x: per_agent_credit(x, "cross", 2, 3))(v),
                                per_agent_credit(v, "cross", 2, 3)))
    mapped, batched = credit(values)
    np.testing.assert_allclose(mapped, batched, rtol=1e-5, atol=1e-6)


def test_credit_checks():
    with pytest.raises(ValueError, match="J=4"):
        per_agent_credit(np.zeros(3, np.float32), "cross", 2, 2)
    with pytest.raises(ValueError, match="reduce"):
        per_agent_credit(np.zeros(4, np.float32), "cross", 2, 2, reduce="max")
    with pytest.raises(ValueError, match="num_agents"):
        joint_action_index("align", 0, 2)
