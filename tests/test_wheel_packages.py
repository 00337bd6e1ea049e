"""setup.py's packages: the library only. bench/, tools/, experiments/ and tests/ run from
a checkout and stay out of the wheel; every mtrl package with an __init__.py is in it."""

import ast
import pathlib

from setuptools import find_packages

ROOT = pathlib.Path(__file__).resolve().parents[1]


def setup_packages() -> list[str]:
    """find_packages called with setup.py's own literal arguments."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and getattr(n.func, "id", None) == "find_packages"]
    assert len(calls) == 1
    kwargs = {k.arg: ast.literal_eval(k.value) for k in calls[0].keywords}
    return find_packages(str(ROOT), **kwargs)


def test_the_wheel_holds_the_library_and_nothing_else():
    packages = setup_packages()
    assert all(p == "mtrl" or p.startswith("mtrl.") for p in packages), packages
    assert {"mtrl", "mtrl.evidence", "mtrl.training"} <= set(packages)
    assert (ROOT / "bench" / "__init__.py").exists() and (ROOT / "tools" / "__init__.py").exists()
    assert not {"bench", "tools", "experiments", "tests"} & {p.split(".")[0] for p in packages}
