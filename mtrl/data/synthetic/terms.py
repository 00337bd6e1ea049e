"""The integer terms g(x) that functions of the synthetic family are built from.

A family member is f(x) = g(x) + b. Every term here is 0 at x = 0, so an example
shown at x = 0 reveals the offset b and nothing about g: that is the ambiguity the
family is built on (see `mtrl.data.synthetic.family`). Terms are registered by name
(docs/design.md section 6, rule 10); a config lists the names it draws from.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from mtrl.registry import Registry


@dataclasses.dataclass(frozen=True)
class Term:
    """g(x) both as Python source (`expression`, in the variable x) and as a
    function (`apply`); tests check that the two agree."""

    name: str
    expression: str
    apply: Callable[[int], int]
    coefficient: int | None = None  # k for a linear term k*x: the helper writes it as k


    def __post_init__(self):
        if not self.name:
            raise ValueError("Term.name must be non-empty")
        if "x" not in self.expression:
            raise ValueError(f"Term {self.name!r}: expression must use x, got {self.expression!r}")


TERMS: Registry[Term] = Registry("integer term")


def _register(term: Term) -> None:
    TERMS.register(term.name)(term)


_register(Term("x", "x", lambda x: x, coefficient=1))
_register(Term("2x", "2*x", lambda x: 2 * x, coefficient=2))
_register(Term("3x", "3*x", lambda x: 3 * x, coefficient=3))
_register(Term("4x", "4*x", lambda x: 4 * x, coefficient=4))
_register(Term("neg", "-x", lambda x: -x, coefficient=-1))
# Coefficients beyond the default's 1..4: the family's test split (FamilyConfig.test_terms).
_register(Term("5x", "5*x", lambda x: 5 * x, coefficient=5))
_register(Term("6x", "6*x", lambda x: 6 * x, coefficient=6))
_register(Term("7x", "7*x", lambda x: 7 * x, coefficient=7))
# Negative coefficients beyond -1: an unseen-coefficient test whose answers are built
# only from pieces the default trains on ("-x", "2*x"): a test of composition rather
# than of digits the byte model never wrote.
_register(Term("neg2x", "-2*x", lambda x: -2 * x, coefficient=-2))
_register(Term("neg3x", "-3*x", lambda x: -3 * x, coefficient=-3))
_register(Term("neg4x", "-4*x", lambda x: -4 * x, coefficient=-4))
_register(Term("square", "x*x", lambda x: x * x))
_register(Term("mod3", "x%3", lambda x: x % 3))  # Python's %: result in {0, 1, 2}
_register(Term("half", "x//2", lambda x: x // 2))  # floor division, rounds down
