"""The contributor path of CONTRIBUTING.md, followed literally: its estimator, loss,
environment and suite guides' files (the code blocks headed `# mtrl/...`) are written
into a throwaway package `contrib` (tmp_path, on sys.path for this test only, each
`mtrl.<new module>` read as `contrib.<new module>`; a folder mtrl already has gets the
__init__.py it has there, a new folder only what the guide writes), the guide's
registration lines are added to the live registries' `modules` (the source files stay
untouched) and the registries import the package themselves; then the config defaults
are regenerated in-process the documented way (generate.main, written to tmp_path and
read in place of the table), a config selecting the four parses into their options, one
setting their options under other entries is refused in one line, and the guide's own
`--smoke` command runs a whole smoke run on them (SFT on the suite's demonstrations,
an RL step whose update runs, evaluation, a checkpoint). A missing registration line,
a missing __init__.py or a trait that slips back into a consumer as a list of names
breaks this test."""

from __future__ import annotations

import importlib
import importlib.util
import pathlib
import re
import shlex
import sys

import pytest

from mtrl.config import ConfigErrors

ROOT = pathlib.Path(__file__).resolve().parents[2]
GUIDE = ROOT / "CONTRIBUTING.md"
PACKAGE = "contrib"  # stands in for mtrl for the files the guides add


def guide_blocks(text: str, prefix: str) -> list[tuple[str, str | None, str]]:
    """(path, registry or None, body) of each fenced block whose first line is
    `# <path>` or `# <path>: <REGISTRY>.modules`, for paths under `prefix`."""
    out = []
    for match in re.finditer(r"```\w*\n(.*?)```", text, re.S):
        first, _, body = match.group(1).partition("\n")
        head = re.fullmatch(r"(?:#|//) (\S+?)(?:: (\w+)\.modules)?", first.strip())
        if head and head.group(1).startswith(prefix):
            out.append((head.group(1), head.group(2), body))
    return out


def module_of(path: str) -> str:
    """mtrl/envs/my_env/__init__.py -> mtrl.envs.my_env; mtrl/a/b.py -> mtrl.a.b."""
    parts = pathlib.PurePosixPath(path).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def smoke_overrides(text: str) -> list[str]:
    """The --config.* flags of the guide's `python -m mtrl.train --smoke ...` command."""
    command = re.search(r"python -m mtrl\.train --smoke(.*?)\n\n", text, re.S).group(1)
    return [arg for arg in shlex.split(command.replace("\\\n", " "))
            if arg.startswith("--config.")]


@pytest.fixture
def contributed(tmp_path, monkeypatch):
    """The guides followed into tmp_path/contrib; the registries and the embedded
    defaults as they are after them (restored when the test ends)."""
    from mtrl.data.suite import SUITES
    from mtrl.envs.registry import ENV_BUILDERS
    from mtrl.losses import POLICY_LOSSES
    from mtrl.training.advantages.registry import CREDIT_ESTIMATORS

    for registry in (SUITES, ENV_BUILDERS, POLICY_LOSSES, CREDIT_ESTIMATORS):
        registry.load()  # the built-in entries, then a copy this test may extend
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))
        monkeypatch.setattr(registry, "_imported", set(registry._imported))
    text = GUIDE.read_text()
    blocks = guide_blocks(text, "mtrl/")
    files = [(path, body) for path, registry, body in blocks if registry is None]
    new = sorted({module_of(path) for path, _ in files}, key=len, reverse=True)
    assert len(files) >= 7 and len(blocks) - len(files) == 4  # 4 registration lines
    own = re.compile(r"\bmtrl\.(" + "|".join(re.escape(m[5:]) for m in new) + r")\b")

    def ours(source: str) -> str:
        return own.sub(PACKAGE + r".\1", source)

    for path, body in files:
        target = tmp_path / PACKAGE / pathlib.PurePosixPath(path).relative_to("mtrl")
        for folder in reversed(target.relative_to(tmp_path).parents[:-1]):
            (tmp_path / folder).mkdir(exist_ok=True)
            in_mtrl = ROOT / "mtrl" / folder.relative_to(PACKAGE)
            if in_mtrl.is_dir() and (in_mtrl / "__init__.py").exists():
                (tmp_path / folder / "__init__.py").touch()  # mtrl already has it
        target.write_text(ours(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    registries = {}
    for path, name, body in blocks:
        if name is None:
            continue
        registry = getattr(importlib.import_module(module_of(path)), name)
        lines = tuple(ours(m) for m in re.findall(r'"([\w.]+)"', body))
        monkeypatch.setattr(registry, "modules", registry.modules + lines)
        registries[name] = registry
    yield registries
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]


@pytest.fixture
def regenerated(contributed, tmp_path, monkeypatch):
    """`python -m mtrl.training.config.generate`, in-process: the table it writes (to
    tmp_path) is the embedded default config for this test."""
    from mtrl.training.config import defaults, defaults_table, generate, migrate
    assert "my_coef" not in defaults.SECTIONS["credit"]  # not before the guide's step
    table = tmp_path / "defaults_table.py"
    monkeypatch.setattr(generate, "TABLE", table)
    generate.main()
    spec = importlib.util.spec_from_file_location("regenerated_defaults_table", table)
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    for module in (defaults_table, defaults, migrate):
        for name in ("TOP_LEVEL", "SECTIONS", "NONE_TYPES"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, getattr(fresh, name))
    return contributed


def test_the_registries_load_the_contributed_package(contributed):
    names = {"CREDIT_ESTIMATORS": "my_method", "POLICY_LOSSES": "scaled-pg",
             "ENV_BUILDERS": "my_env", "SUITES": "my_tasks"}
    assert set(contributed) == set(names)
    for registry_name, entry in names.items():
        registry = contributed[registry_name]
        assert entry in registry
        assert registry.modules[-1].startswith(PACKAGE + ".")
        assert registry.modules[-1] in sys.modules  # imported by the registry itself
    assert contributed["POLICY_LOSSES"].get("scaled-pg").clipped is False


def test_without_the_init_the_environment_is_refused(contributed, tmp_path):
    (tmp_path / PACKAGE / "envs" / "my_env" / "__init__.py").unlink()
    registry = contributed["ENV_BUILDERS"]
    with pytest.raises(ImportError, match=f"{PACKAGE}.envs.my_env has no __init__.py"):
        registry.load()


def selecting_them():
    from mtrl.training.config import base_config
    from mtrl.training.config.overrides import apply_overrides
    return apply_overrides(base_config(), smoke_overrides(GUIDE.read_text()))


def test_a_config_selecting_them_parses_into_their_options(regenerated, no_work):
    from mtrl.training.config import parse
    run = parse(selecting_them())
    assert (run.env.name, run.data.name, run.credit.estimator, run.loss.objective.loss) == (
        "my_env", "my_tasks", "my_method", "scaled-pg")
    assert run.env.options.word == "yes"
    assert run.credit.options.my_coef == 0.5
    assert run.loss.objective.loss_config.scale == 2.0


@pytest.mark.parametrize("section, field, value", [
    ("credit", "my_coef", 0.25), ("loss", "pg_scale", 2.0), ("env", "word", "ok")])
def test_their_options_under_another_entry_are_refused(regenerated, no_work, section, field,
                                                       value):
    from mtrl.training.config import base_config, parse
    c = base_config()
    c[section][field] = value  # a field of the regenerated default
    with pytest.raises(ConfigErrors) as error:
        parse(c)
    assert len(error.value.lines) == 1
    assert error.value.lines[0].startswith(f"config.{section}.{field}: set to {value!r}, but "
                                           "only ") and "leave it unset" in str(error.value)


def test_the_guides_smoke_command_runs_on_them(regenerated, tmp_path):
    """What `python -m mtrl.train --smoke <the guide's flags>` does, in-process (the
    contributed package lives in this process's registries)."""
    from mtrl.sampling import BucketPolicy
    from mtrl.training.config import apply_smoke
    from mtrl.training.config.smoke import SAMPLER_BUCKETS
    from mtrl.training.loop.trainer import Trainer
    config = selecting_them()
    flags = smoke_overrides(GUIDE.read_text())
    apply_smoke(config, keep=frozenset(f.split("=")[0][len("--config."):] for f in flags))
    trainer = Trainer(config, tmp_path / "workdir-smoke", show_progress=False,
                      sampler_buckets=BucketPolicy(**SAMPLER_BUCKETS))
    try:
        result = trainer.run()
    finally:
        trainer.close()
    assert trainer.run_config.credit.estimator == "my_method"
    assert result["steps"] == 1 and result["updates_run"] == 1
    assert (tmp_path / "workdir-smoke" / "sft.jsonl").exists()  # SFT on its demonstrations
