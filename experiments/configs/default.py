"""The embedded default: two agents learn, from scratch on a CPU, to write the integer
functions of the built-in family (mtrl.data.synthetic) over T = 2 turns, where the
second turn sees level_feedback with the first hidden test. SFT warm start, then
MAGRPO (REINFORCE with tree advantages), held-out evaluation, best checkpoint.

    python -m mtrl.train --config=experiments/configs/default.py --workdir=/tmp/mtrl
"""

from mtrl.training.config import base_config


def get_config():
    return base_config()
