"""The launcher's command line: bad input ends in one line naming the flag or file,
and loading a config (or --help) imports neither jax nor orbax."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def launch(*args):
    return subprocess.run([sys.executable, "-m", "mtrl.train", *args], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=120)


def error_lines(result):
    return [line for line in result.stderr.splitlines() if line.strip()]


@pytest.mark.parametrize("args, expected", [
    (["--config.train.stepz=3"], "--config.train.stepz: the config has no field 'train.stepz' "
                                 "(did you mean 'steps'?)"),
    (["--config=no/such/config.py"], "config file 'no/such/config.py' does not exist"),
    (["--config.model.overrides.dtype=bfloat16"], "--config.model.overrides.dtype: the config "
                                                  "has no field 'model.overrides.dtype'"),
    (["--config.rollout.num_generations=two"], "--config.rollout.num_generations=two"),
    (["--no_such_flag"], "no_such_flag"),
])
def test_bad_command_lines_end_in_one_line(args, expected):
    result = launch(*args)
    assert result.returncode != 0
    lines = error_lines(result)
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and expected in lines[0], lines[0]


def test_a_config_file_that_raises_is_one_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("raise RuntimeError('broken config')\n")
    result = launch(f"--config={bad}")
    assert result.returncode != 0
    assert error_lines(result) == [
        "error: --config: loading the config failed: RuntimeError: broken config"]


def test_loading_configs_and_help_import_no_jax():
    probe = (
        "import sys, pathlib\n"
        "import mtrl.train\n"
        "from mtrl.training.config import module_from_file\n"
        "for path in sorted(pathlib.Path('experiments/configs').glob('*.py')):\n"
        "    module_from_file(path).get_config()\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'orbax', 'flax'))\n"
        "print(heavy)\n")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=ENV,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    help_text = launch("--help")
    # absl's --help exits with status 1 after printing the usage.
    assert "--config" in help_text.stdout and "Traceback" not in help_text.stderr


def test_every_config_error_at_once_and_none_unsets_a_field(tmp_path):
    """Each error one line, all together; --config.<field>=None sets a field
    the config file set back to the embedded default."""
    config = tmp_path / "mine.py"
    config.write_text("from mtrl.training.config import base_config\n\n\n"
                      "def get_config():\n"
                      "    c = base_config()\n"
                      "    c.credit.turn_coef = 0.5  # an mt_grpo option under magrpo\n"
                      "    c.loss.eps_low = 0.1  # a clip under reinforce\n"
                      "    return c\n")
    result = launch(f"--config={config}", "--config.train.steps=-1",
                    f"--workdir={tmp_path / 'run'}")
    lines = error_lines(result)
    assert result.returncode != 0 and all(line.startswith("error: config.") for line in lines)
    assert [line.split(":")[1].strip() for line in lines] == [
        "config.train.steps", "config.loss.eps_low", "config.credit.turn_coef"], lines
    result = launch(f"--config={config}", "--config.train.steps=-1",
                    "--config.credit.turn_coef=None", "--config.loss.eps_low=None",
                    f"--workdir={tmp_path / 'run'}")
    assert error_lines(result) == ["error: config.train.steps: must be an int >= 0, got -1"]


def test_none_for_a_field_the_config_lacks_is_one_line():
    result = launch("--config.train.stepz=None")
    assert error_lines(result) == ["error: --config.train.stepz: the config has no field "
                                   "'train.stepz'; a flag can only set a field that the "
                                   "config file defines"]


def test_a_refused_run_leaves_no_workdir_behind(tmp_path):
    # Refused by the config's checks, after the launcher made the workdir's folders.
    result = launch("--config.rollout.num_generations=0", f"--workdir={tmp_path / 'new' / 'run'}")
    assert result.returncode != 0
    assert error_lines(result)[-1].startswith("error: config.rollout"), result.stderr
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"  # a folder that was there before is not removed
    kept.mkdir()
    result = launch("--config.rollout.num_generations=0", f"--workdir={kept}")
    assert result.returncode != 0 and kept.is_dir()


def test_default_workdirs_carry_the_configs_argument_and_smoke():
    from mtrl.train import default_workdir
    assert default_workdir("experiments/configs/tool.py:mbpp") == "workdir/tool-mbpp"
    assert default_workdir("experiments/configs/tool.py") == "workdir/tool"
    assert default_workdir("/abs/math.py", smoke=True) == "workdir/math-smoke"
    assert default_workdir("x.py:a b/c") == "workdir/x-a_b_c"


def test_a_config_file_without_get_config_says_so(tmp_path):
    bare = tmp_path / "bare.py"
    bare.write_text("x = 1\n")
    result = launch(f"--config={bare}")
    assert result.returncode != 0
    lines = error_lines(result)
    assert len(lines) == 1 and "defines no get_config()" in lines[0], result.stderr


def test_an_empty_workdir_is_refused_not_the_default_run(tmp_path):
    result = launch("--workdir=", "--config.train.steps=0")
    assert result.returncode != 0
    lines = error_lines(result)
    assert lines == ["error: --workdir is empty; give a directory, or leave the flag out "
                     "for workdir/default"], result.stderr


def test_a_smoke_run_says_where_its_workdir_went(capsys):
    from mtrl.train import chosen_workdir
    assert chosen_workdir("runs/x/", "experiments/configs/math.py", smoke=True) == "runs/x-smoke"
    assert "writing to runs/x-smoke" in capsys.readouterr().out
    assert chosen_workdir("runs/x", "experiments/configs/math.py", smoke=False) == "runs/x"
    assert chosen_workdir(None, "experiments/configs/math.py", smoke=True) == \
        "workdir/math-smoke"
    assert capsys.readouterr().out == ""
