"""The embedded default task family: infer an integer function from one example.

Family. A member is f(x) = g(x) + b with a term g from a small registered set
(default: x, 2*x, 3*x, x*x, -x; see `terms.py`) and an integer offset b in a range
(default -9..9). The agent is shown the function's name and ONE example, e.g.

    Write f(x) with f(0) == 7.

and must answer with a one-line program such as `def f(x):\n    return 2*x+7`.
The hidden tests are a few asserts at other points (`assert f(-2) == 3`, ...).

Ambiguity. One point does not determine a member: with the default example at
x = 0 every term vanishes, so all |terms| members with that offset (x+7, 2*x+7,
3*x+7, x*x+7, -x+7) fit it, and turn-1 success is at most 1/|terms| (20% by
default) for a policy that guesses the term well. Examples away from 0
(`example_xs`) still fit several members but also need arithmetic for b.

Why feedback helps. The FIRST hidden test is a probe point chosen so that the
example and the probe together single out the true function among all family
members that fit the example. Any in-family wrong guess therefore fails the first
test, which is exactly the test that `level_feedback` with sandbox_slice = 1 shows:
the turn-2 prompt carries a second point, and two points determine the member.
The other tests then check the answer away from those two points.

Splits. Held-out functions are those whose offset lies in a held-out subset of the
offset range (seeded), so no held-out function appears in train; train tasks whose
example coincides with a held-out example are dropped as well, so a held-out
prompt never appears in train with a different answer (which would teach the
policy to avoid exactly the held-out answers). Individual assert strings can
coincide across splits (different functions can agree at one point); the pair
(example, first test), which identifies a function, cannot.
"""

from __future__ import annotations

import dataclasses

from mtrl.config.fields import check_choice
from mtrl.data.synthetic.terms import check_term, get_term, linear_term_name


@dataclasses.dataclass(frozen=True, order=True)
class IntFunction:
    """f(x) = g(x) + offset, g the registered term `term`."""

    term: str
    offset: int

    def __post_init__(self):
        check_term("term", self.term)

    def __call__(self, x: int) -> int:
        return get_term(self.term).apply(x) + self.offset

    @property
    def expression(self) -> str:
        """Canonical Python source: '2*x+7', 'x*x-3', '-x' (offset 0 omitted)."""
        return with_offset(get_term(self.term).expression, self.offset)


def with_offset(base: str, offset: int) -> str:
    """`base` plus an integer as source: ('2*x', 7) -> '2*x+7', ('aux(x)', -3) ->
    'aux(x)-3', (base, 0) -> base."""
    if offset > 0:
        return f"{base}+{offset}"
    if offset < 0:
        return f"{base}-{-offset}"
    return base


PROBE_FORMS = ("value", "difference")
HELDOUT_BY = ("offset", "function", "values")


@dataclasses.dataclass(frozen=True)
class FamilyConfig:
    """Which functions exist and how their tasks look.

    terms: term names (`terms.get_term`: registered ones, or linear "12x" / "neg12x").
    coefficient_range: (low, high), or () for none: the terms are then every linear
      k*x with low <= k <= high, k != 0 (`terms` is replaced), so that reading k from
      the feedback means copying a number, not naming one of a few terms.
    offset_range: inclusive (low, high) range of b.
    example_xs: points where the one shown example may be taken.
    test_xs: points where hidden tests may be taken (the example's x is excluded).
    num_tests: hidden asserts per task; the first one is the disambiguating probe.
    probe_xs: points where the probe may be taken (empty: any of test_xs). One fixed
      probe point makes the probe's value alone name the term (with linear terms and
      probe x = 1 it IS the coefficient), which a tiny model reads far sooner than a
      (point, value) pair.
    heldout_offset_fraction: share of the offsets whose functions are held out
      (heldout_by="offset").
    heldout_value_fraction: heldout_by="values": the share of the coefficients and
      of the offsets held out for validation (and as many again for test with
      iid_test), chosen one per stratum of the sorted values, so they spread over
      each range.
    entry_point: the function name the prompt asks for and the tests call.
    probe_form: how the first (probe) test is written. "value": `assert f(x1) == y1`;
      "difference": `assert f(x1) - f(x0) == d` with x0 the example's point, so the
      failing probe shown as feedback carries the term's own change g(x1) - g(x0),
      which names the term without arithmetic on the offset (the other tests stay
      value tests).
    heldout_by: what the held-out split withholds. "offset": every function with a
      held-out offset (a held-out prompt never occurs in train). "function": one
      term per offset (seeded, balanced over terms), so every term and every offset
      occurs in train but no held-out (term, offset) pair does; held-out prompts do
      occur in train with the other terms, so a policy that answers turn 1 from the
      prompt alone avoids the held-out term and can only solve held-out tasks by
      reading the feedback. "values" (linear terms, coefficient_range): validation
      holds out a set of coefficients and a set of offsets, its members are their
      product, and no train member has either value, so no number a held-out task
      shows (its example, its probe, its tests' values aside) occurs in any train
      prompt or feedback: every agent-visible text of a held-out task is new.
    test_terms / test_offset_range: the out-of-distribution test members, test_terms
      x test offsets, which must share no member with terms x offset_range (empty:
      none). With terms and offsets outside the training ones, such a task's prompt
      and its failing probe (the turn-2 observation) show values no agent saw in
      training. They form the "test" split, or with iid_test the "ood_test" split.
    iid_test: the "test" split holds held-out members drawn like validation's, from
      terms x offset_range (numbers seen in training), in neither train nor
      validation: heldout_by="function" deals a second term per offset (one not held
      out for validation there), heldout_by="offset" holds out as many offsets
      again. Validation's members are the same as without it; train loses the test
      members. The test_terms x test_offset_range members, if any, become "ood_test".
    """

    terms: tuple[str, ...] = ("x", "2x", "3x", "square", "neg")
    coefficient_range: tuple[int, ...] = ()
    offset_range: tuple[int, int] = (-9, 9)
    example_xs: tuple[int, ...] = (0,)
    test_xs: tuple[int, ...] = (-3, -2, -1, 1, 2, 3, 4)
    num_tests: int = 3
    probe_xs: tuple[int, ...] = ()
    heldout_offset_fraction: float = 0.25
    heldout_value_fraction: float = 0.1
    entry_point: str = "f"
    probe_form: str = "value"
    heldout_by: str = "offset"
    test_terms: tuple[str, ...] = ()
    test_offset_range: tuple[int, ...] = ()
    iid_test: bool = False

    def __post_init__(self):
        for name in ("terms", "example_xs", "test_xs", "offset_range", "probe_xs",
                     "test_terms", "test_offset_range", "coefficient_range"):
            if not isinstance(getattr(self, name), tuple):
                raise TypeError(f"FamilyConfig.{name} must be a tuple")
        if self.coefficient_range:
            low, high = (self.coefficient_range + (None, None))[:2]
            if len(self.coefficient_range) != 2 or not low <= high:
                raise ValueError(f"FamilyConfig.coefficient_range must be (low, high) with "
                                 f"low <= high, got {self.coefficient_range}")
            object.__setattr__(self, "terms", tuple(
                linear_term_name(k) for k in range(low, high + 1) if k != 0))
        if len(self.terms) < 2 or len(set(self.terms)) != len(self.terms):
            raise ValueError(f"FamilyConfig.terms must be >= 2 distinct names, got {self.terms}")
        for term in self.terms:
            _check_term(term)
        if len(self.offset_range) != 2 or self.offset_range[0] > self.offset_range[1]:
            raise ValueError(f"FamilyConfig.offset_range must be (low, high) with low <= high, "
                             f"got {self.offset_range}")
        if self.num_offsets < 2:
            raise ValueError("FamilyConfig.offset_range must hold >= 2 offsets to split")
        if not self.example_xs or len(set(self.example_xs)) != len(self.example_xs):
            raise ValueError(f"FamilyConfig.example_xs must be distinct and non-empty, "
                             f"got {self.example_xs}")
        if len(set(self.test_xs)) != len(self.test_xs):
            raise ValueError(f"FamilyConfig.test_xs must be distinct, got {self.test_xs}")
        if not set(self.probe_xs) <= set(self.test_xs):
            raise ValueError(f"FamilyConfig.probe_xs must be a subset of test_xs, "
                             f"got {self.probe_xs} (test_xs {self.test_xs})")
        if self.num_tests < 1:
            raise ValueError(f"FamilyConfig.num_tests must be >= 1, got {self.num_tests}")
        for x0 in self.example_xs:
            if len(set(self.test_xs) - {x0}) < self.num_tests:
                raise ValueError(f"FamilyConfig.test_xs has fewer than num_tests="
                                 f"{self.num_tests} points besides the example x={x0}")
        if not 0.0 < self.heldout_offset_fraction < 1.0:
            raise ValueError(f"FamilyConfig.heldout_offset_fraction must be in (0, 1), "
                             f"got {self.heldout_offset_fraction}")
        check_choice("FamilyConfig.probe_form", self.probe_form, PROBE_FORMS)
        check_choice("FamilyConfig.heldout_by", self.heldout_by, HELDOUT_BY)
        self._check_test_members()
        if not isinstance(self.iid_test, bool):
            raise ValueError(f"FamilyConfig.iid_test must be a bool, got {self.iid_test!r}")
        if self.iid_test and self.heldout_by == "function" and len(self.terms) < 3:
            raise ValueError("FamilyConfig.iid_test with heldout_by='function' needs >= 3 "
                             "terms (validation, test and train each keep one per offset)")
        if not 0.0 < self.heldout_value_fraction < 0.5:
            raise ValueError(f"FamilyConfig.heldout_value_fraction must be in (0, 0.5), "
                             f"got {self.heldout_value_fraction}")
        if self.heldout_by == "values":
            self._check_values_split()
        if self.iid_test and self.heldout_by == "offset" and \
                self.num_offsets - 2 * self.num_heldout_offsets < 1:
            raise ValueError("FamilyConfig.iid_test: offset_range leaves no train offset "
                             "after validation's and test's held-out offsets")
        if not self.entry_point.isidentifier() or self.entry_point in ("x", "aux"):
            raise ValueError(f"FamilyConfig.entry_point must be an identifier other than "
                             f"'x' and 'aux', got {self.entry_point!r}")

    def _check_values_split(self) -> None:
        if any(get_term(t).coefficient is None for t in self.terms):
            raise ValueError("FamilyConfig.heldout_by='values' needs linear terms (set "
                             "coefficient_range), got " + ", ".join(self.terms))
        for name, count in (("coefficients", len(self.terms)), ("offsets", self.num_offsets)):
            if count - 2 * heldout_value_count(count, self.heldout_value_fraction) < 1:
                raise ValueError(f"FamilyConfig.heldout_by='values': too few {name} ({count}) "
                                 f"to hold out {self.heldout_value_fraction:.0%} twice")

    def _check_test_members(self) -> None:
        if not self.test_terms and not self.test_offset_range:
            return
        if not self.test_terms or len(self.test_offset_range) != 2 \
                or self.test_offset_range[0] > self.test_offset_range[1]:
            raise ValueError("FamilyConfig: a test split needs test_terms and test_offset_range="
                             f"(low, high), got {self.test_terms}, {self.test_offset_range}")
        for term in self.test_terms:
            _check_term(term)
        shared = set(self.test_members()) & set(self.members())
        if shared:
            raise ValueError(f"FamilyConfig: test members also in train/heldout, e.g. "
                             f"{sorted(shared)[0]}")

    def test_members(self) -> tuple[IntFunction, ...]:
        """The test split's functions, term-major (empty: no test split)."""
        if not self.test_terms:
            return ()
        low, high = self.test_offset_range
        return tuple(IntFunction(t, b) for t in self.test_terms for b in range(low, high + 1))

    def test_family(self) -> "FamilyConfig":
        """The family a test task's example is ambiguous in: every term (train and test)
        at the test offsets, so its probe separates the test function from all of them."""
        terms = self.terms + tuple(t for t in self.test_terms if t not in self.terms)
        return dataclasses.replace(self, terms=terms, offset_range=self.test_offset_range,
                                   test_terms=(), test_offset_range=())

    @property
    def offsets(self) -> tuple[int, ...]:
        low, high = self.offset_range
        return tuple(range(low, high + 1))

    @property
    def num_offsets(self) -> int:
        return self.offset_range[1] - self.offset_range[0] + 1

    @property
    def num_heldout_offsets(self) -> int:
        count = round(self.heldout_offset_fraction * self.num_offsets)
        return min(max(count, 1), self.num_offsets - 1)

    def members(self) -> tuple[IntFunction, ...]:
        """Every function of the family, term-major."""
        return tuple(IntFunction(term, b) for term in self.terms for b in self.offsets)


def _check_term(name: str) -> None:
    get_term(name)  # a KeyError listing the registered names


def heldout_value_count(count: int, fraction: float) -> int:
    """How many of `count` values heldout_by="values" holds out per split (>= 1)."""
    return max(1, round(fraction * count))


def consistent_members(config: FamilyConfig, x: int, y: int) -> tuple[IntFunction, ...]:
    """The family members f with f(x) == y: the hypotheses one example leaves open
    (term-major, as `members()`). Each term admits at most the one offset
    b = y - g(x), so this costs |terms|, not |terms| x |offsets|."""
    low, high = config.offset_range
    out = []
    for term in config.terms:
        b = y - get_term(term).apply(x)
        if low <= b <= high:
            out.append(IntFunction(term, b))
    return tuple(out)


def separating_probes(config: FamilyConfig, function: IntFunction,
                      example_x: int) -> tuple[int, ...]:
    """Test points x1 (from `probe_xs`, or `test_xs` if that is empty; never the
    example's) where `function` differs from every other member that fits its example:
    the example and f(x1) together identify `function` within the family."""
    rivals = [m for m in consistent_members(config, example_x, function(example_x))
              if m != function]
    return tuple(x1 for x1 in (config.probe_xs or config.test_xs)
                 if x1 != example_x and all(r(x1) != function(x1) for r in rivals))
