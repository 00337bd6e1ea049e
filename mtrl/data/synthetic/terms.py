"""The integer terms g(x) that functions of the synthetic family are built from.

A family member is f(x) = g(x) + b. Every term here is 0 at x = 0, so an example
shown at x = 0 reveals the offset b and nothing about g: that is the ambiguity the
family is built on (see `mtrl.data.synthetic.family`). Terms are registered by name
(docs/design.md section 6, rule 10); a config lists the names it draws from.

Linear terms k*x exist for every non-zero integer k without registration, named like
the registered ones: "x" (k = 1), "neg" (k = -1), "12x", "neg12x" (`linear_term_name`,
`get_term`), so a family can draw its coefficients from a wide range
(FamilyConfig.coefficient_range).
"""

from __future__ import annotations

import dataclasses
import functools
import re
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


_LINEAR_NAME = re.compile(r"(neg)?([1-9][0-9]*)x")


def linear_term_name(k: int) -> str:
    """The name of the term k*x: 1 -> "x", -1 -> "neg", 12 -> "12x", -12 -> "neg12x"."""
    if not isinstance(k, int) or isinstance(k, bool) or k == 0:
        raise ValueError(f"a linear term needs a non-zero integer coefficient, got {k!r}")
    if abs(k) == 1:
        return "x" if k == 1 else "neg"
    return f"{k}x" if k > 0 else f"neg{-k}x"


@functools.lru_cache(maxsize=None)
def get_term(name: str) -> Term:
    """The registered term `name`, or the linear term a name like "12x" / "neg12x"
    denotes; anything else raises with the registered names."""
    if name in TERMS:
        return TERMS.get(name)
    match = _LINEAR_NAME.fullmatch(name) if isinstance(name, str) else None
    if match is None:
        TERMS.get(name)  # raises, listing the registered names
    k = int(match.group(2)) * (-1 if match.group(1) else 1)
    return Term(name, f"{k}*x", lambda x, k=k: k * x, coefficient=k)


def check_term(field: str, name) -> None:
    """`name` is a registered term or a linear "Kx" / "negKx" one; otherwise one line,
    check_choice's wording: "<field> must be one of x, 2x, ... or a linear 'Kx' /
    'negKx', got <name!r>"."""
    try:
        get_term(name)
    except (KeyError, TypeError):
        raise ValueError(f"{field} must be one of {', '.join(TERMS.names())} or a linear "
                         f"'Kx' / 'negKx', got {name!r}") from None
