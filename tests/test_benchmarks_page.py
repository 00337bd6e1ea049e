"""BENCHMARKS.md names only things that exist: every repository path it cites (records,
programs, configs), every `python -m bench.X` / `tools.X` module, every local link; it
stays a short page and names no tracker issue or working session."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGE = ROOT / "BENCHMARKS.md"
MAX_LINES = 300

# A repository path: starts at a top-level folder, not inside another path (/tmp/bench/...).
_PATH = re.compile(r"(?<![\w/.-])((?:bench|tools|experiments|mtrl)/[\w./-]*[\w/])")
_MODULE = re.compile(r"python -m ((?:bench|tools|mtrl)(?:\.\w+)+)")
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
_TRACKER = re.compile(r"\bissues?\s*#?\d+|\bsession\b|\bround \d+\b", re.IGNORECASE)


def missing_paths(text: str, root: pathlib.Path) -> list[str]:
    """Repository paths named in `text` that do not exist under `root`."""
    return sorted({p for p in _PATH.findall(text) if not (root / p).exists()})


def missing_modules(text: str, root: pathlib.Path) -> list[str]:
    """`python -m pkg.mod` modules named in `text` with no pkg/mod.py (or package) under `root`."""
    out = set()
    for module in _MODULE.findall(text):
        rel = pathlib.Path(*module.split("."))
        if not ((root / rel).with_suffix(".py").exists() or (root / rel / "__main__.py").exists()):
            out.add(module)
    return sorted(out)


def missing_links(text: str, root: pathlib.Path) -> list[str]:
    """Relative markdown link targets in `text` that do not exist under `root`."""
    return sorted({t for t in _LINK.findall(text)
                   if "://" not in t and not (root / t).exists()})


def test_checkers_catch_what_is_missing(tmp_path):
    (tmp_path / "bench" / "records").mkdir(parents=True)
    (tmp_path / "bench" / "records" / "a.json").write_text("{}")
    (tmp_path / "bench" / "decode.py").write_text("")
    text = ("`bench/records/a.json` `bench/records/gone.json` `/tmp/bench/x.json` "
            "`python -m bench.decode --out x` `python -m bench.gone` [r](RESULTS.md) [g](#goals)")
    assert missing_paths(text, tmp_path) == ["bench/records/gone.json"]
    assert missing_modules(text, tmp_path) == ["bench.gone"]
    assert missing_links(text, tmp_path) == ["RESULTS.md"]
    assert _TRACKER.search("see issue 43") and _TRACKER.search("the fifth session")
    assert not _TRACKER.search("a sampler round trip")


def test_every_named_path_exists():
    assert missing_paths(PAGE.read_text(), ROOT) == []


def test_every_named_module_exists():
    text = PAGE.read_text()
    assert _MODULE.search(text), "the page names no command"
    assert missing_modules(text, ROOT) == []


def test_every_local_link_exists():
    assert missing_links(PAGE.read_text(), ROOT) == []


def test_short_and_free_of_tracker_labels():
    text = PAGE.read_text()
    assert len(text.splitlines()) <= MAX_LINES
    assert _TRACKER.findall(text) == []
