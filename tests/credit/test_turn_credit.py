import pytest

from mtrl.credit import (TURN_CREDIT, gigpo_advantages, igpo_advantages, magrpo_advantages,
                         mt_grpo_advantages, per_turn_advantages)


def test_registry_lists_exactly_the_turn_schemes():
    want = {"mt_grpo": mt_grpo_advantages, "per_turn": per_turn_advantages,
            "igpo": igpo_advantages, "gigpo": gigpo_advantages, "magrpo": magrpo_advantages}
    assert TURN_CREDIT.names() == ("gigpo", "igpo", "magrpo", "mt_grpo", "per_turn")
    assert len(TURN_CREDIT) == len(want)
    for name, fn in want.items():
        assert TURN_CREDIT.get(name) is fn, name
    with pytest.raises(KeyError, match="valid names: gigpo, igpo, magrpo, mt_grpo, per_turn"):
        TURN_CREDIT.get("grpo")
