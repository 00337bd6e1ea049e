"""The plain-data codec: what crosses from the candidate is rebuilt from builtins only."""

import decimal
import fractions
import math

import numpy as np
import pytest

from mtrl.envs.sandbox import codec


@pytest.mark.parametrize("value", [
    None, True, False, 0, -7, 10**40, 1.5, -0.0, "text", "ünï", [], [1, [2, [3]]],
    (), (1, "a"), {"k": 1}, {1: "a", (2, 3): [4]}, {1, 2}, frozenset({"a"}), b"\x00\xff",
    bytearray(b"ab"), 1 + 2j, range(1, 10, 3), fractions.Fraction(3, 4),
    decimal.Decimal("1.25"),
])
def test_round_trip_keeps_value_and_type(value):
    back = codec.decode(codec.encode(value))
    assert back == value
    assert type(back) is type(value)


def test_nan_and_infinities_cross():
    back = codec.decode(codec.encode([math.inf, -math.inf, math.nan]))
    assert back[0] == math.inf and back[1] == -math.inf and math.isnan(back[2])


def test_iterators_are_materialized():
    back = codec.decode(codec.encode(map(str, range(3))))
    assert list(back) == ["0", "1", "2"]


def test_numpy_values_are_rebuilt_as_numpy():
    array = codec.decode(codec.encode(np.arange(6, dtype=np.int32).reshape(2, 3)))
    assert isinstance(array, np.ndarray) and array.dtype == np.int32 and array.shape == (2, 3)
    scalar = codec.decode(codec.encode(np.float64(2.5)))
    assert scalar == 2.5 and isinstance(scalar, np.float64)


class AlwaysEqual:
    def __eq__(self, other):
        return True


class LyingInt(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class LyingList(list):
    def __eq__(self, other):
        return True

    def __iter__(self):
        return iter([42])


def test_objects_with_behaviour_do_not_cross():
    with pytest.raises(codec.NotPlainData):
        codec.encode(AlwaysEqual())
    with pytest.raises(codec.NotPlainData):
        codec.encode([1, object()])


def test_opaque_values_keep_only_truth_and_repr():
    tree = codec.to_plain([AlwaysEqual(), None], opaque=True)
    value, none = codec.from_plain(tree)
    assert isinstance(value, codec.Opaque) and none is None
    assert value != 1 and value != "x" and value == value
    assert bool(value) is True and "AlwaysEqual" in repr(value)
    with pytest.raises(codec.ProtocolError):
        codec.from_plain({"$opaque": ["X", "yes", "x"]})


def test_builtin_subclasses_cross_as_their_plain_value():
    value = codec.decode(codec.encode(LyingInt(3)))
    assert type(value) is int and value == 3 and value != 4
    value = codec.decode(codec.encode(LyingList([1, 2])))
    assert type(value) is list and value == [1, 2]  # read through list's own iterator


def test_decoder_refuses_untagged_objects_and_unknown_tags():
    with pytest.raises(codec.ProtocolError):
        codec.decode(b'{"a": 1}')
    with pytest.raises(codec.ProtocolError):
        codec.decode(b'{"$pickle": "x"}')
    with pytest.raises(codec.ProtocolError):
        codec.decode(b"not json")


def test_depth_limit():
    deep: list = []
    node = deep
    for _ in range(codec.MAX_DEPTH + 5):
        node.append([])
        node = node[0]
    with pytest.raises(codec.NotPlainData):
        codec.encode(deep)
