"""The loss mask after the advantages stage's filters (TCOD turns, void turns), pinned: each
case's mask is the one the filters gave before they were gathered into one pipeline
(sha256 of the [N, C, L] bool mask, recorded on that code), and the filters only clear
tokens: each case is the AND of the filters it switches on."""

import hashlib

import numpy as np
import pytest

from mtrl.rollout import StepRollout
from mtrl.training.grow.curriculum import CurriculumConfig
from mtrl.training.advantages.loss_mask import MaskSettings, filter_loss_mask, tcod_turn_mask
from tests.training.advantages.test_penalties import scripted

CASES = {  # name: (tcod, steps_per_stage, step, void_turns)
    "off": ("", 10, 1, False),
    "tcod_front_step1": ("front_to_back", 10, 1, False),
    "tcod_front_step11": ("front_to_back", 10, 11, False),
    "tcod_back_step1": ("back_to_front", 10, 1, False),
    "void": ("", 10, 1, True),
    "tcod_front_step11_void": ("front_to_back", 10, 11, True),
    "tcod_back_step1_void": ("back_to_front", 10, 1, True),
}
GOLDEN = {  # recorded on the filters as they were before the pipeline (commit 1893b3a)
    "off": "cd9e89a4480e4f71d52208a89fee34955fa23b1be756659397170a07148ea4ee",
    "tcod_back_step1": "923374ca0d8242907f9a74670c4f412c5a7da67e93998579cdd743aa1b66ea34",
    "tcod_back_step1_void": "1581cc45b3932b2b2c3b6ca25476f587db8bd6472a25ca30637955fc21ca71c6",
    "tcod_front_step1": "7cd216a049328f4b9dffe0314bc2f5294947326e0fa1ba72c8fef36ff8ae9646",
    "tcod_front_step11": "1a57261c5beaf18cb960f3fd5885986e7fad756b2f463be91304e6bc3d630e0d",
    "tcod_front_step11_void": "f4200f47a826ea68ee8b1d7b5a635833f7862631076fe2a5ebf593ae6c6bb674",
    "void": "380d410013d8be3c9f524e1027fc1fcbf9859e0cca34d897a50334365a4f8aee",
}


def filtered_mask(name):
    tcod, per_stage, step, void = CASES[name]
    tree, batch = scripted()
    settings = MaskSettings(CurriculumConfig(tcod=tcod, steps_per_stage=per_stage),
                            void_turns=void, num_turns=3)
    shaped = filter_loss_mask(settings, StepRollout(tree, batch), step)
    assert shaped.tree is tree
    return np.asarray(batch.loss_mask), np.asarray(shaped.batch.loss_mask)


def digest(mask):
    return hashlib.sha256(np.ascontiguousarray(mask, dtype=bool).tobytes()).hexdigest()


@pytest.mark.parametrize("name", sorted(CASES))
def test_mask_is_pinned(name):
    before, after = filtered_mask(name)
    assert digest(after) == GOLDEN[name]
    assert not np.any(after & ~before)  # a filter never puts a token back
    assert (name == "off") == np.array_equal(after, before)


def test_filters_compose_as_and():
    for both, parts in [("tcod_front_step11_void", ("tcod_front_step11", "void")),
                        ("tcod_back_step1_void", ("tcod_back_step1", "void"))]:
        a, b = (filtered_mask(p)[1] for p in parts)
        np.testing.assert_array_equal(filtered_mask(both)[1], a & b)


TURNS = np.array([[1, 1, 2, 2, 0], [2, 0, 0, 0, 0]], np.int32)


def test_tcod_front_to_back_grows_the_trained_turns_per_stage():
    c = CurriculumConfig(tcod="front_to_back", steps_per_stage=10)
    first = np.asarray(tcod_turn_mask(c, TURNS, 1, 2))
    assert first.tolist() == [[True, True, False, False, False], [False] * 5]
    assert np.asarray(tcod_turn_mask(c, TURNS, 10, 2)).tolist() == first.tolist()
    later = np.asarray(tcod_turn_mask(c, TURNS, 11, 2))
    assert later.tolist() == (TURNS > 0).tolist()


def test_tcod_back_to_front_starts_at_the_last_turn():
    c = CurriculumConfig(tcod="back_to_front", steps_per_stage=3)
    first = np.asarray(tcod_turn_mask(c, TURNS, 1, 2))
    assert first.tolist() == [[False, False, True, True, False], [True] + [False] * 4]
    assert np.asarray(tcod_turn_mask(c, TURNS, 4, 2)).tolist() == (TURNS > 0).tolist()
    assert tcod_turn_mask(CurriculumConfig(), TURNS, 1, 2) is None
