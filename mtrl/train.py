"""Experiment launcher: `python -m mtrl.train --config=experiments/configs/default.py`.

Flags:
  --config   an ml_collections config file (default: the embedded default);
             override fields with --config.rollout.num_generations=8 and so on.
  --workdir  where checkpoints, metrics.jsonl, TensorBoard events, transcripts and
             the learning curve go (default: ./workdir/<config name>).
  --out      optional JSON file for the run's summary (minutes, success numbers).
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

from absl import app, flags, logging
from ml_collections import config_flags

DEFAULT_CONFIG = str(pathlib.Path(__file__).resolve().parents[1] / "experiments" / "configs"
                     / "default.py")

_CONFIG = config_flags.DEFINE_config_file("config", DEFAULT_CONFIG,
                                          "Experiment config file.", lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Output directory of the run.")
_OUT = flags.DEFINE_string("out", None, "Write the run summary as JSON here.")
_PROGRESS = flags.DEFINE_bool("progress", True, "Show the progress bar / lines.")


def main(argv) -> None:
    del argv
    logging.set_verbosity(logging.WARNING)  # orbax logs every save at INFO
    config = _CONFIG.value
    name = pathlib.Path(config_flags.get_config_filename(flags.FLAGS["config"])).stem
    workdir = _WORKDIR.value or os.path.join("workdir", name)
    from mtrl.training.trainer import Trainer  # heavy imports after flag parsing
    try:
        trainer = Trainer(config, workdir, show_progress=_PROGRESS.value)
    except ValueError as e:
        sys.exit(f"error: {e}")
    try:
        result = trainer.run()
    finally:
        trainer.close()
    if _OUT.value:
        with open(_OUT.value, "w") as f:
            json.dump(result, f, indent=2)


def run() -> None:
    app.run(main)


if __name__ == "__main__":
    run()
