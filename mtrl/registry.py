"""Name -> object registries for swappable pieces (docs/design.md section 6, rule 10).

Advantage estimators, policy losses, KL estimators, aggregations, rewards,
environments and task suites register themselves under a name; configs refer to them
by that name, and the valid names always come from the registry itself.

Loading (one mechanism for every registry; CONTRIBUTING.md): an entry is registered
by the module that defines it (a `register` decorator or call). A registry whose
entries live in modules of their own names those modules in `modules`, and imports
them, in order, the first time it is read (get, names, `in`, iteration, len), so a
module that only needs the registry's type imports none of its entries. A listed
module must sit in regular packages (each with an `__init__.py`: setuptools'
find_packages leaves any other folder out of a wheel); one that does not is refused
in one line when the registry loads.

Spelling (checked at registration): a name is lower-case ASCII letters and digits,
words joined by one "_", "-" or "." (`NAME_PATTERN`: "dr_grpo", "gspo-token",
"qwen2.5-0.5b"), and no two names of one registry differ only in "_" versus "-"
(so a name read with either separator, e.g. loss "turn_ratio", is unambiguous).
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import Callable, Generic, Iterator, Sequence, TypeVar

T = TypeVar("T")

NAME_PATTERN = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")


def check_name(kind: str, name: object) -> str:
    """`name` when it follows the spelling rule (module docstring), else ValueError."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise ValueError(f"{kind} name {name!r} must be lower-case letters and digits, words "
                         "joined by one '_', '-' or '.' (e.g. 'dr_grpo', 'gspo-token')")
    return name


def separator_free(name: str) -> str:
    """The name with '-' read as '_' (two names equal under it collide)."""
    return name.replace("-", "_")


def check_regular_package(module: str) -> None:
    """One line unless every package above the imported `module` has an __init__.py."""
    parts = module.split(".")
    for end in range(1, len(parts)):
        package = sys.modules.get(".".join(parts[:end]))
        if package is not None and getattr(package, "__file__", None) is None:
            raise ImportError(f"{'.'.join(parts[:end])} has no __init__.py (a namespace "
                              f"package, which find_packages leaves out of a wheel); add one "
                              f"so that {module} is installed")


class Registry(Generic[T]):
    """A named collection of interchangeable components of one kind.

    kind: what an entry is, for messages. modules: the modules whose import registers
    entries, imported in order on the first read (module docstring).
    """

    def __init__(self, kind: str, modules: Sequence[str] = ()):
        self.kind = kind
        self.modules: tuple[str, ...] = tuple(modules)
        self._entries: dict[str, T] = {}
        self._imported: set[str] = set()

    def load(self) -> None:
        """Imports each listed module not imported yet (a read does this first)."""
        for module in self.modules:
            if module in self._imported:
                continue
            self._imported.add(module)  # first: a read during its import goes on
            try:
                importlib.import_module(module)
                check_regular_package(module)
            except BaseException:
                self._imported.discard(module)
                raise

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator that adds `fn` under `name`; a duplicate name (or one equal to a
        registered name but for '_' versus '-') or a misspelled one is an error."""
        check_name(self.kind, name)

        def add(fn: T) -> T:
            clash = [n for n in self._entries if separator_free(n) == separator_free(name)]
            if clash:
                raise ValueError(f"{self.kind} {name!r} is already registered"
                                 + (f" (as {clash[0]!r})" if clash[0] != name else ""))
            self._entries[name] = fn
            return fn

        return add

    def get(self, name: str) -> T:
        self.load()
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise KeyError(f"{self.kind} must be one of {', '.join(self.names())}, "
                           f"got {name!r}") from None

    def names(self) -> tuple[str, ...]:
        self.load()
        return tuple(sorted(self._entries))

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self.load()
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, names={list(self.names())})"
