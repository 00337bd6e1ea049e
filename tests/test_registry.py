"""mtrl/registry.py: the one loading mechanism of every registry (its `modules`, imported
on the first read; a listed module in a folder without __init__.py is refused), the
spelling rule checked at registration, and, over the source, that every module which
registers into a registry is listed there (or is the module that defines it), so a
missing registration line cannot go unseen."""

import ast
import importlib
import importlib.util
import pathlib
import sys

import pytest

from mtrl.registry import Registry, check_name
from tests.test_wheel_packages import setup_packages

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Decorators that register into a registry of another module: {helper: registry}.
HELPERS = {"register_env": "ENV_BUILDERS", "path_estimator": "CREDIT_ESTIMATORS",
           "group_function": "GROUP_ADVANTAGES", "code_reward": "CODE_REWARDS"}


def write_package(root: pathlib.Path, name: str, registry_module: str, with_init=True):
    """A package `name` whose module `entries` registers "one" into `registry_module`'s
    REG when imported."""
    package = root / name
    package.mkdir()
    if with_init:
        (package / "__init__.py").write_text("")
    (package / "entries.py").write_text(
        f"from {registry_module} import REG\nREG.register('one')('the entry')\n")


@pytest.fixture
def registry_module(tmp_path, monkeypatch):
    """A module `reg_home` holding an empty REG = Registry("thing"), importable."""
    (tmp_path / "reg_home.py").write_text(
        "from mtrl.registry import Registry\nREG = Registry('thing')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    names = ("reg_home", "listed", "listed.entries", "loose", "loose.entries")
    yield importlib.import_module("reg_home")
    for name in names:  # this test's modules leave with it
        sys.modules.pop(name, None)


def test_a_registry_imports_its_listed_modules_on_the_first_read(tmp_path, registry_module):
    write_package(tmp_path, "listed", "reg_home")
    registry_module.REG.modules = ("listed.entries",)
    assert "listed.entries" not in sys.modules  # listing imports nothing
    assert registry_module.REG.get("one") == "the entry"
    assert registry_module.REG.names() == ("one",)


def test_an_unlisted_module_is_not_loaded(tmp_path, registry_module):
    write_package(tmp_path, "listed", "reg_home")
    with pytest.raises(KeyError, match="thing must be one of , got 'one'"):
        registry_module.REG.get("one")


def test_a_listed_module_in_a_folder_without_init_is_refused(tmp_path, registry_module):
    write_package(tmp_path, "loose", "reg_home", with_init=False)
    registry_module.REG.modules = ("loose.entries",)
    with pytest.raises(ImportError, match="loose has no __init__.py .*find_packages"):
        registry_module.REG.names()


@pytest.mark.parametrize("name", ["dr_grpo", "gspo-token", "qwen2.5-0.5b", "2x", "k1"])
def test_names_that_follow_the_spelling_rule(name):
    assert check_name("thing", name) == name


@pytest.mark.parametrize("name", ["Grpo", "my method", "a__b", "_a", "b-", "", None, "a/b"])
def test_names_that_break_the_spelling_rule_are_refused_at_registration(name):
    with pytest.raises(ValueError, match="lower-case letters and digits"):
        Registry("thing").register(name)


def test_two_names_that_differ_only_in_the_separator_collide():
    registry = Registry("thing")
    registry.register("turn-ratio")(1)
    with pytest.raises(ValueError, match="'turn_ratio' is already registered .as 'turn-ratio'"):
        registry.register("turn_ratio")(2)


def registries() -> dict[str, tuple[str, ast.AST]]:
    """{registry name: (the module defining it, its Registry(...) call)} over mtrl/."""
    found = {}
    for path in sorted((ROOT / "mtrl").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            value = getattr(node, "value", None)
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(value, ast.Call) \
                    and getattr(value.func, "id", None) == "Registry":
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
                found[target.id] = (module, value)
    return found


def registering_modules(registry: str) -> set[str]:
    """Modules under mtrl/ that call `registry.register(...)` or a helper of it."""
    helpers = [h for h, r in HELPERS.items() if r == registry]
    out = set()
    for path in (ROOT / "mtrl").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if (isinstance(func, ast.Attribute) and func.attr == "register"
                    and getattr(func.value, "id", None) == registry) \
                    or getattr(func, "id", None) in helpers:
                out.add(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return out


def test_every_module_that_registers_an_entry_is_listed_by_its_registry():
    found = registries()
    assert {"ENV_BUILDERS", "SUITES", "POLICY_LOSSES", "CREDIT_ESTIMATORS", "TOKENIZERS",
            "GROUP_ADVANTAGES", "CODE_REWARDS"} <= set(found)
    for name, (home, _) in found.items():
        registry = getattr(importlib.import_module(home), name)
        unlisted = registering_modules(name) - {home} - set(registry.modules)
        assert not unlisted, (f"{name}: {sorted(unlisted)} register entries; list them in "
                              f"its modules ({home})")


def test_every_listed_module_is_installed_by_the_wheel():
    packages = set(setup_packages())
    for name, (home, _) in registries().items():
        for module in getattr(importlib.import_module(home), name).modules:
            assert module.rsplit(".", 1)[0] in packages, (name, module)
            assert importlib.util.find_spec(module) is not None, (name, module)
