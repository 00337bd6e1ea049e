"""The embedded default as it was until 2026-11-28, kept as an ablation arm:
the helper's coefficient k over -19..19 (the default now draws it over -99..99, as
main's offset), ood_test coefficients 23, -27, 31.

Why it was replaced: with ~31 distinct k in training a table of answers fits the
helper's SFT as well as copying does. After its SFT the helper reproduced its train
revisions (copy k from the probe `f(1) - f(0) == k`) on 0-54% of train rows and 0%
of validation rows on four seeds of five (experiments/default_narrow_k/copy_check.json), and
RL left test success at 0.00 on three seeds of five (experiments/default_narrow_k/seeds_0_4.json).
Everything else is the default's, except the warm-start check (sft.check_min_exact,
on in the default since): this arm ran without it, and its warm starts that copy no
unseen k are what the check stops before RL.

    python -m mtrl.train --config=experiments/configs/default_narrow_k.py --workdir=/tmp/narrow_k
"""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "mtrl_default_config", pathlib.Path(__file__).with_name("default.py"))
_default = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_default)


def get_config():
    c = _default.get_config()
    c.data.options = dict(c.data.options, coefficient_range=(-19, 19),
                          test_terms=("23x", "neg27x", "31x"))
    c.sft.check_min_exact = 0.0  # as recorded: no check (module docstring)
    return c
