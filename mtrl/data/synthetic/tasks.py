"""Seeded generation of the synthetic "infer an integer function" tasks and splits.

Determinism: everything derives from `seed` through numpy's PCG64 generator, with
one independent stream per purpose (which offsets are held out, the train tasks,
the held-out tasks), so generating more train tasks never changes the held-out
ones and `load_intfn_tasks(split=...)` returns the same tasks as `make_splits`.

Splits: "train", "heldout" (the validation split: chooses the best checkpoint) and
"test" (reported once at the end): FamilyConfig.test_terms x test_offset_range
(functions, prompts and probes outside the other two), or with FamilyConfig.iid_test
held-out members drawn like validation's (`iid_test_functions`), the former then
being "ood_test".
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import numpy as np

from mtrl.config.fields import check_choice
from mtrl.data.synthetic.family import (FamilyConfig, IntFunction, consistent_members,
                                        heldout_value_count, separating_probes)
from mtrl.data.synthetic.terms import get_term
from mtrl.envs.code.task import CodeTask

Split = Literal["train", "heldout", "test", "ood_test"]
SPLITS = ("train", "heldout", "test", "ood_test")
# "test" and "ood_test" draw the out-of-distribution tasks from one stream (3), so
# turning iid_test on renames the former test tasks without changing one of them.
_STREAM = {"offsets": 0, "train": 1, "heldout": 2, "ood": 3, "iid_test": 4,
           "test_members": 5}
_ATTEMPTS_PER_TASK = 50


@dataclasses.dataclass(frozen=True)
class SyntheticTask:
    """A CodeTask plus what generated it (for demonstrations, tests and analysis)."""

    task: CodeTask
    function: IntFunction
    example_x: int
    split: Split

    @property
    def example_y(self) -> int:
        return self.function(self.example_x)


@dataclasses.dataclass(frozen=True)
class SyntheticSplits:
    train: tuple[SyntheticTask, ...]
    heldout: tuple[SyntheticTask, ...]
    heldout_offsets: tuple[int, ...]
    test: tuple[SyntheticTask, ...] = ()
    ood_test: tuple[SyntheticTask, ...] = ()  # with iid_test: the test_terms members

    def code_tasks(self, split: Split) -> list[CodeTask]:
        return [item.task for item in getattr(self, _checked(split))]


def _checked(split: str) -> str:
    check_choice("split", split, SPLITS)
    return split


def _rng(seed: int, purpose: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), _STREAM[purpose]])


def heldout_offsets(config: FamilyConfig, seed: int) -> tuple[int, ...]:
    """The offsets whose functions form the held-out split (sorted)."""
    chosen = _rng(seed, "offsets").choice(config.num_offsets, config.num_heldout_offsets,
                                          replace=False)
    return tuple(sorted(config.offsets[int(i)] for i in chosen))


def task_prompt(entry_point: str, example_x: int, example_y: int) -> str:
    """'Write f(x) with f(0) == 7.' (26 bytes: short prompts are what a tiny model
    learns to read quickly)."""
    return f"Write {entry_point}(x) with {entry_point}({example_x}) == {example_y}."


def canonical_program(function: IntFunction, entry_point: str) -> str:
    return f"def {entry_point}(x):\n    return {function.expression}\n"


def probe_test(config: FamilyConfig, function: IntFunction, example_x: int, probe: int) -> str:
    """The first hidden test, in the family's probe_form (see FamilyConfig)."""
    name = config.entry_point
    if config.probe_form == "difference":
        change = function(probe) - function(example_x)
        return f"assert {name}({probe}) - {name}({example_x}) == {change}"
    return f"assert {name}({probe}) == {function(probe)}"


def _make_task(config: FamilyConfig, function: IntFunction, example_x: int, probe: int,
               others: list[int], task_id: str, split: Split) -> SyntheticTask:
    name = config.entry_point
    tests = (probe_test(config, function, example_x, probe),
             *(f"assert {name}({x}) == {function(x)}" for x in others))
    code_task = CodeTask(task_id=task_id,
                         prompt=task_prompt(name, example_x, function(example_x)),
                         entry_point=name, tests=tests,
                         canonical_solution=canonical_program(function, name))
    return SyntheticTask(code_task, function, example_x, split)


def spread_choice(values: tuple[int, ...], count: int, rng: np.random.Generator,
                  exclude: frozenset = frozenset()) -> tuple[int, ...]:
    """`count` of the sorted `values` not in `exclude`, one drawn from each of `count`
    equal strata (consecutive runs), so the choice spreads over the whole range."""
    free = sorted(v for v in values if v not in exclude)
    if count > len(free):
        raise ValueError(f"cannot hold out {count} of {len(free)} values")
    bounds = np.linspace(0, len(free), count + 1).round().astype(int)
    return tuple(free[int(rng.integers(lo, hi))] for lo, hi in zip(bounds[:-1], bounds[1:]))


def heldout_values(config: FamilyConfig, seed: int, split: str
                   ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """heldout_by="values": (coefficients, offsets) held out for `split` ("heldout" or
    "test"); test's are drawn outside validation's."""
    coefficients = tuple(get_term(t).coefficient for t in config.terms)
    k_count = heldout_value_count(len(coefficients), config.heldout_value_fraction)
    b_count = heldout_value_count(config.num_offsets, config.heldout_value_fraction)
    rng = _rng(seed, "offsets")
    ks = spread_choice(coefficients, k_count, rng)
    bs = spread_choice(config.offsets, b_count, rng)
    if split == "heldout":
        return ks, bs
    rng = _rng(seed, "test_members")
    return (spread_choice(coefficients, k_count, rng, frozenset(ks)),
            spread_choice(config.offsets, b_count, rng, frozenset(bs)))


def _members_with_values(config: FamilyConfig, ks, bs) -> frozenset[IntFunction]:
    return frozenset(f for f in config.members()
                     if get_term(f.term).coefficient in ks and f.offset in bs)


def heldout_functions(config: FamilyConfig, seed: int) -> frozenset[IntFunction]:
    """The held-out members: those with a held-out offset (heldout_by="offset"), or
    one term per offset, the terms dealt out in seeded rounds so each is held out for
    about |offsets| / |terms| offsets (heldout_by="function"), or the held-out
    coefficients x the held-out offsets (heldout_by="values")."""
    if config.heldout_by == "values":
        return _members_with_values(config, *heldout_values(config, seed, "heldout"))
    if config.heldout_by == "offset":
        held = set(heldout_offsets(config, seed))
        return frozenset(f for f in config.members() if f.offset in held)
    rng = _rng(seed, "offsets")
    deck: list[str] = []
    chosen = []
    for b in config.offsets:
        if not deck:
            deck = [config.terms[int(i)] for i in rng.permutation(len(config.terms))]
        chosen.append(IntFunction(deck.pop(), b))
    return frozenset(chosen)


def _generate(config: FamilyConfig, split: Split, functions: tuple[IntFunction, ...],
              forbidden_examples: frozenset, num_tasks: int, seed: int,
              stream: str | None = None) -> tuple[SyntheticTask, ...]:
    rng = _rng(seed, stream or split)
    candidates = []  # (function, example_x, probes) with at least one probe
    for function in functions:
        for x0 in config.example_xs:
            if (x0, function(x0)) in forbidden_examples:
                continue
            probes = separating_probes(config, function, x0)
            if probes:
                candidates.append((function, x0, probes))
    if not candidates:
        raise ValueError(f"no {split} function of this family can be identified by one "
                         "example and one test; widen test_xs or change the terms")
    tasks: list[SyntheticTask] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for _ in range(num_tasks * _ATTEMPTS_PER_TASK):
        if len(tasks) == num_tasks:
            break
        function, x0, probes = candidates[int(rng.integers(len(candidates)))]
        probe = probes[int(rng.integers(len(probes)))]
        rest = [x for x in config.test_xs if x not in (x0, probe)]
        others = [rest[int(i)] for i in rng.permutation(len(rest))[:config.num_tests - 1]]
        task = _make_task(config, function, x0, probe, others,
                          f"intfn/{split}/{len(tasks):05d}", split)
        key = (task.task.prompt, task.task.tests)
        if key not in seen:
            seen.add(key)
            tasks.append(task)
    if len(tasks) < num_tasks:
        raise ValueError(f"the family has too few distinct {split} tasks for "
                         f"num_tasks={num_tasks} (found {len(tasks)})")
    return tuple(tasks)


def iid_test_functions(config: FamilyConfig, seed: int,
                       held: frozenset[IntFunction]) -> frozenset[IntFunction]:
    """The iid test members (FamilyConfig.iid_test), drawn like the validation members
    `held` from terms x offset_range and disjoint from them.

    heldout_by="function": per offset b, one term t with (t, b) not in `held`, dealt
    from seeded rounds of the terms (a term the round's deck offers that is held at
    b stays in the deck), so each term is a test term at about |offsets| / |terms|
    offsets, as in validation. heldout_by="offset": every term at
    num_heldout_offsets seeded offsets outside validation's.
    """
    if config.heldout_by == "values":
        return _members_with_values(config, *heldout_values(config, seed, "test"))
    rng = _rng(seed, "test_members")
    if config.heldout_by == "offset":
        held_offsets = {f.offset for f in held}
        free = [b for b in config.offsets if b not in held_offsets]
        chosen = rng.choice(len(free), config.num_heldout_offsets, replace=False)
        offsets = {free[int(i)] for i in chosen}
        return frozenset(f for f in config.members() if f.offset in offsets)
    deck: list[str] = []
    chosen = []
    for b in config.offsets:
        allowed = [t for t in config.terms if IntFunction(t, b) not in held]
        if not any(t in deck for t in allowed):
            deck += [config.terms[int(i)] for i in rng.permutation(len(config.terms))]
        term = next(t for t in deck if t in allowed)
        deck.remove(term)
        chosen.append(IntFunction(term, b))
    return frozenset(chosen)


def make_splits(config: FamilyConfig = FamilyConfig(), *, num_train: int = 2000,
                num_heldout: int = 200, seed: int = 0, num_test: int = 0,
                num_ood_test: int = 0) -> SyntheticSplits:
    """Train and held-out tasks of the family, disjoint in functions and task texts,
    `num_test` test tasks and, with config.iid_test, `num_ood_test` ood_test tasks
    (each split its own stream: asking for test tasks changes no train or held-out
    task).

    test: config.iid_test ? members of `iid_test_functions` (no train member then)
    : the config's test_terms x test_offset_range members. ood_test (iid_test only):
    the latter.

    Functions are drawn uniformly over the terms, then offsets of the split, then
    example points, so that for an example at 0 every term is equally likely given
    the prompt (turn-1 success of the best guesser = 1/|terms|).
    """
    if min(num_train, num_heldout, num_test, num_ood_test) < 0:
        raise ValueError(f"task counts must be >= 0, got {num_train}, {num_heldout}, "
                         f"{num_test}, {num_ood_test}")
    ood_count = num_ood_test if config.iid_test else num_test
    if num_ood_test and not config.iid_test:
        raise ValueError("num_ood_test: the family has no ood_test split without iid_test")
    if ood_count and not config.test_members():
        raise ValueError("the family has no test split: set test_terms and test_offset_range")
    held = heldout_functions(config, seed)
    iid = iid_test_functions(config, seed, held) if config.iid_test else frozenset()
    # Members in the order of `members()` (term-major), so sampling stays uniform over
    # terms, then offsets.
    heldout_members = tuple(f for f in config.members() if f in held)
    iid_members = tuple(f for f in config.members() if f in iid)
    train_members = tuple(f for f in config.members() if f not in held and f not in iid)
    if config.heldout_by == "values":  # no train member shares a held-out value
        ks = {get_term(f.term).coefficient for f in held | iid}
        bs = {f.offset for f in held | iid}
        train_members = tuple(f for f in train_members
                              if get_term(f.term).coefficient not in ks and f.offset not in bs)
    if config.heldout_by == "offset":
        # A held-out prompt must not occur in train (or test) with another answer.
        def examples(members):
            return frozenset((x0, f(x0)) for f in members for x0 in config.example_xs)
        forbidden, test_forbidden = examples(heldout_members + iid_members), \
            examples(heldout_members)
    else:
        forbidden = test_forbidden = frozenset()  # shared prompts by design (heldout_by)
    heldout = _generate(config, "heldout", heldout_members, frozenset(), num_heldout, seed)
    train = _generate(config, "train", train_members, forbidden, num_train, seed)
    offsets = tuple(sorted({f.offset for f in heldout_members}))
    ood = (_generate(config.test_family(), "ood_test" if config.iid_test else "test",
                     config.test_members(), frozenset(), ood_count, seed, stream="ood")
           if ood_count else ())
    if config.iid_test:
        test = (_generate(config, "test", iid_members, test_forbidden, num_test, seed,
                          stream="iid_test") if num_test else ())
        return SyntheticSplits(train=train, heldout=heldout, heldout_offsets=offsets,
                               test=test, ood_test=ood)
    return SyntheticSplits(train=train, heldout=heldout, heldout_offsets=offsets, test=ood)


def ambiguity(config: FamilyConfig, item: SyntheticTask) -> int:
    """How many family members fit the task's shown example (1 = unambiguous)."""
    return len(consistent_members(config, item.example_x, item.example_y))


def load_intfn_tasks(path: Any = None, split: str = "train", *, seed: int = 0,
                     num_tasks: int | None = None, **config: Any) -> list[CodeTask]:
    """`DATASETS`-style loader: the built-in family needs no file (`path` must be
    None). num_tasks defaults to 2000 (train) / 200 (heldout, test); `config` holds
    FamilyConfig fields (lists are accepted for its tuple fields)."""
    if path is not None:
        raise ValueError("the synthetic integer-function tasks are generated; pass path=None")
    split = _checked(split)
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in config.items()}
    family = FamilyConfig(**fields)
    counts = {"num_train": 0, "num_heldout": 0, "num_test": 0}
    counts["num_" + split] = num_tasks if num_tasks is not None else (
        2000 if split == "train" else 200)
    return make_splits(family, seed=seed, **counts).code_tasks(split)
