"""Experiment launcher: `python -m mtrl.train --config=experiments/configs/default.py`.

Flags:
  --config   an ml_collections config file (default: the embedded default);
             override fields with --config.rollout.num_generations=8 and so on;
             --config.<field>=None sets a field back to the embedded default (what a
             config file that never set it gives: None where that means "unset").
  --workdir  where checkpoints, metrics.jsonl, TensorBoard events, transcripts and
             the learning curve go (default: ./workdir/<config name>, with the
             config's argument: tool.py:mbpp -> workdir/tool-mbpp; default_workdir).
  --out      optional JSON file for the run's summary (minutes, success numbers).
  --smoke    any config shrunk to run end to end in a minute or two (one RL step that
             always updates, 4 SFT updates, 2 validation and test tasks, one ranked
             checkpoint, no export, coarse sampler buckets; mtrl/training/config/
             smoke.py); the workdir, default or --workdir, gets a -smoke suffix, so a
             smoke run never shares the directory of the real run of that command.
  --coordinator_address, --num_processes, --process_id, --distributed_auto
             join a multi-process run (jax.distributed; mtrl/parallel/distributed.py):
             explicit on GPU nodes and local CPU processes, --distributed_auto on TPU
             pod slices (every host runs the same command). The mesh over all
             processes' devices is config.mesh.shape.

A bad command line (a config file that does not exist or fails to load, an override of
a field the config does not have, a value of the wrong type) ends with one line naming
the flag, not a traceback; a config with errors ends with every error, one line each. Nothing heavy (jax, orbax) is imported before the flags are
parsed, so `--help` is fast.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import sys

from absl import app, flags, logging
from ml_collections import config_flags

DEFAULT_CONFIG = str(pathlib.Path(__file__).resolve().parents[1] / "experiments" / "configs"
                     / "default.py")

_WORKDIR = flags.DEFINE_string("workdir", None, "Output directory of the run.")
_OUT = flags.DEFINE_string("out", None, "Write the run summary as JSON here.")
_PROGRESS = flags.DEFINE_bool("progress", True, "Show the progress bar / lines.")
_SMOKE = flags.DEFINE_bool("smoke", False, "Shrink the config to a short run "
                           "(mtrl/training/config/smoke.py); the workdir (default or "
                           "--workdir) gets a -smoke suffix.")
_COORDINATOR = flags.DEFINE_string("coordinator_address", "",
                                   "host:port of process 0 (multi-process runs).")
_NUM_PROCESSES = flags.DEFINE_integer("num_processes", 1, "Processes in the run.")
_PROCESS_ID = flags.DEFINE_integer("process_id", 0, "This process's index.")
_DISTRIBUTED_AUTO = flags.DEFINE_bool("distributed_auto", False,
                                      "jax.distributed.initialize() with auto-detection "
                                      "(TPU pod slices, SLURM).")
_CONFIG = None  # defined by run(): ml_collections reads the overrides at definition
_UNSET: list[tuple[str, str]] = []  # (flag, dotted field) of each --config.<field>=None


def _override_flags(argv: list[str]) -> list[tuple[str, str]]:
    """(flag as typed, dotted field path) of each --config.<path>=... argument."""
    out = []
    for arg in argv[1:]:
        match = re.match(r"--?config\.([\w.]+)", arg)
        if match:
            out.append((arg.split("=", 1)[0], match.group(1)))
    return out


def take_unsets(argv: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """argv without its --config.<field>=None arguments, and (flag, field) of each
    (ml_collections cannot parse None for a typed field; main applies them)."""
    kept, unset = argv[:1], []
    for arg in argv[1:]:
        match = re.fullmatch(r"(--?config\.([\w.]+))=None", arg)
        if match:
            unset.append((match.group(1), match.group(2)))
        else:
            kept.append(arg)
    return kept, unset


def apply_unsets(config, unset: list[tuple[str, str]]) -> None:
    """Sets each field back to the embedded default (base_config's value)."""
    from mtrl.training.config.defaults import base_value
    for flag, dotted in unset:
        *parents, name = dotted.split(".")
        node = config
        try:
            for parent in parents:
                node = node[parent]
            node[name]  # the field must exist, as for any override
            default = base_value(dotted)
        except (KeyError, AttributeError):
            sys.exit(f"error: {flag}: the config has no field {dotted!r}; a flag can only "
                     "set a field that the config file defines")
        with node.unlocked():
            node[name] = default


def error_lines(error: BaseException) -> str:
    """`error: ` before each line of an error (a config's errors come all at once)."""
    return "\n".join(f"error: {line}" for line in str(error).splitlines() or [""])


def config_error(error: BaseException, argv: list[str]) -> str:
    """One line naming the flag, field or file that made loading the config fail."""
    while error.args and isinstance(error.args[0], BaseException):
        error = error.args[0]  # AttributeError(KeyError(message)) from ml_collections
    text = " ".join(str(error.args[0] if isinstance(error, KeyError) and error.args
                        else error).split())
    if isinstance(error, AttributeError) and "has no attribute 'get_config'" in text:
        return ("--config: the config file defines no get_config() (a config file is a "
                "Python module with `def get_config():` returning the config)")
    if isinstance(error, (AttributeError, KeyError)):
        # ml_collections: "'stepz' Did you mean "steps" instead of "stepz"?"
        match = re.match(r"""['"]*(\w+)['"]*\s*(.*)""", text)
        key, hint = (match.group(1), match.group(2)) if match else (text, "")
        for flag, path in _override_flags(argv):
            if key in path.split("."):
                suggestion = re.search(r'Did you mean "(\w+)"', hint)
                tail = f" (did you mean {suggestion.group(1)!r}?)" if suggestion else ""
                return (f"{flag}: the config has no field {path!r}{tail}; a flag can only set "
                        "a field that the config file defines")
        return f"--config: unknown field {key!r}"
    raw = str(error)
    if "Traceback (most recent call last)" in raw:  # the config file's own error, last
        last = [line for line in raw.splitlines() if line.strip()][-1].strip()
        return f"--config: {re.sub(r'^(ValueError|KeyError): ', '', last)[:400]}"
    missing = re.search(r"Attempted \[[^\]]*\]: (\S+) \[Errno 2\]", text)
    if missing:
        return f"--config: config file {missing.group(1)!r} does not exist"
    if "Failed loading config file" in text or "earlier failure to load" in text:
        return f"--config: the config file failed to load: {text[:300]}"
    if isinstance(error, flags.Error):
        return text[:400]
    return f"--config: loading the config failed: {type(error).__name__}: {text[:300]}"


def default_workdir(config_file: str, smoke: bool = False) -> str:
    """workdir/<config stem>[-<argument>][-smoke] for a --config value (a path, maybe
    with ':argument'): two commands that run different configs never share a run
    directory (tool.py and tool.py:mbpp, a real run and its --smoke run)."""
    path, _, argument = str(config_file).partition(":")
    name = pathlib.Path(path).stem
    if argument:  # a folder name: only word characters, dots and dashes
        name += "-" + re.sub(r"[^\w.-]+", "_", argument)
    return os.path.join("workdir", name + ("-smoke" if smoke else ""))


def _define_config_flag(default: str = DEFAULT_CONFIG):
    global _CONFIG
    if _CONFIG is None:
        _CONFIG = config_flags.DEFINE_config_file("config", default, "Experiment config file.",
                                                  lock_config=True)
    return _CONFIG


def _parse_flags(argv: list[str]) -> list[str]:
    try:
        return flags.FLAGS(argv)
    except Exception as e:  # noqa: BLE001 -- any failure to parse is a usage error
        sys.exit(f"error: {config_error(e, argv)}")


def main(argv) -> None:
    del argv
    logging.set_verbosity(logging.WARNING)  # orbax logs every save at INFO
    try:
        config = _CONFIG.value
        config.keys()  # a file that failed to load raises on first use
    except Exception as e:  # noqa: BLE001 -- e.g. the file failed to load
        sys.exit(f"error: {config_error(e, sys.argv)}")
    apply_unsets(config, _UNSET)
    config_file = config_flags.get_config_filename(flags.FLAGS["config"])
    from mtrl.training.config import resolve_paths
    resolve_paths(config, config_file)  # data and weights: from the checkout, not the cwd
    from mtrl.training.run.inputs import config_inputs_missing
    missing = config_inputs_missing(config, config_file)  # before any work: what makes each
    if missing:
        sys.exit("\n".join(f"error: {line}" for line in missing))
    sampler_buckets = {}
    if _SMOKE.value:
        from mtrl.training.config import apply_smoke
        from mtrl.training.config.smoke import SAMPLER_BUCKETS
        apply_smoke(config, keep=frozenset(path for _, path in _override_flags(sys.argv))
                    | frozenset(path for _, path in _UNSET))
        sampler_buckets = SAMPLER_BUCKETS
    workdir = chosen_workdir(_WORKDIR.value, config_file, _SMOKE.value)
    from mtrl.parallel.distributed import DistributedConfig, initialize
    try:
        distributed = DistributedConfig(_COORDINATOR.value, _NUM_PROCESSES.value,
                                        _PROCESS_ID.value, _DISTRIBUTED_AUTO.value)
    except ValueError as e:
        sys.exit(f"error: --num_processes/--process_id/--coordinator_address: {e}")
    initialize(distributed)  # before the trainer creates any jax array
    from mtrl.training.run import interrupts
    interrupts.install()  # Ctrl-C / SIGTERM: stop at a safe point, one line
    from mtrl.training.loop.trainer import Trainer  # heavy imports after flag parsing
    from mtrl.sampling import BucketPolicy
    created = _first_missing(workdir)
    try:
        trainer = Trainer(config, workdir, show_progress=_PROGRESS.value,
                          sampler_buckets=BucketPolicy(**sampler_buckets))
    except ValueError as e:
        if created is not None:  # a refused run leaves nothing behind
            shutil.rmtree(created, ignore_errors=True)
        sys.exit(error_lines(e))
    from mtrl.training.checkpoints.checkpointing import CheckpointError
    from mtrl.training.update.memory import StepMemoryError
    from mtrl.rollout.environment import EnvironmentFailure
    from mtrl.training.sft.warm_start_check import WarmStartCheckFailed
    interrupted = unusable = None
    try:
        result = trainer.run()
    except interrupts.Interrupted as e:
        interrupted = e
    except CheckpointError as e:  # corrupt or unreadable, with no whole one to fall back to
        unusable = e
    except StepMemoryError as e:  # a packed update that cannot fit: one line, not an OOM
        unusable = e
    except EnvironmentFailure as e:  # e.g. an external environment server stopped answering
        unusable = e
    except WarmStartCheckFailed as e:  # SFT did not learn what RL needs: one line, no RL
        unusable = e
    finally:
        trainer.close()  # waits for the checkpoint in flight
    if interrupted is not None:
        _exit_interrupted(interrupted)
    if unusable is not None:
        sys.exit(f"error: {unusable}")
    from mtrl.parallel.distributed import is_main_process
    if _SMOKE.value and is_main_process() and result["steps"] and not result["updates_run"]:
        sys.exit("error: --smoke: the RL update stage did not run (every step's update "
                 "was skipped: no trainable token after the loss-mask filters); the run "
                 "tested everything else")
    if _OUT.value and is_main_process():  # one summary per run, not per process
        with open(_OUT.value, "w") as f:
            json.dump(result, f, indent=2)


def chosen_workdir(flag_value: str | None, config_file: str, smoke: bool) -> str:
    """The run's directory: --workdir, or default_workdir when the flag is absent.

    A smoke run never shares the real run's directory: --workdir=X becomes X-smoke,
    said in one line. An empty --workdir is refused (it would silently resume the
    default run)."""
    if flag_value is None:
        return default_workdir(config_file, smoke)
    if not flag_value.strip().rstrip("/\\"):
        sys.exit("error: --workdir is empty; give a directory, or leave the flag out "
                 f"for {default_workdir(config_file, smoke)}")
    workdir = flag_value.rstrip("/\\")
    if smoke:
        print(f"--smoke: writing to {workdir}-smoke (a smoke run never shares "
              f"{workdir} with the real run)", flush=True)
        workdir += "-smoke"
    return workdir


def _first_missing(workdir: str) -> pathlib.Path | None:
    """The outermost folder of `workdir` that does not exist yet (what a run made
    there would create), or None."""
    path = pathlib.Path(workdir).absolute()
    missing = None
    while not path.exists():
        missing, path = path, path.parent
    return missing


def _exit_interrupted(e) -> None:
    """One line on stderr and exit status 128 + the signal (no traceback)."""
    print(e.line(), file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(e.exit_code)  # not sys.exit: absl would print nothing, threads may linger


def run() -> None:
    global _UNSET
    sys.argv, _UNSET = take_unsets(sys.argv)
    try:
        _define_config_flag()
    except Exception as e:  # noqa: BLE001 -- overrides are applied at definition
        sys.exit(f"error: {config_error(e, sys.argv)}")
    app.run(main, flags_parser=_parse_flags)


if __name__ == "__main__":
    run()
