"""The embedded default with the helper's coefficient drawn as widely as main's offset
(issue 37's ablation): k over -99..99 instead of -19..19, so ~158 distinct k values
occur in training instead of ~31, and the ood_test coefficients move outside that
range (three-digit k: 123, -127, 131).

Why: after the default's SFT the helper reproduced its train revisions (copy k from
the probe `f(1) - f(0) == k`) on 0-54% of train rows and 0% of validation rows on four
seeds of five, while main copied unseen offsets b on 100% of validation rows on four
seeds of five (docs/default_values/copy_check.json). With ~31 distinct k, a table of
31 answers fits the helper's SFT as well as copying does; with ~158, as for b, copying
is the cheaper fit. Everything else is the default's.

    python -m mtrl.train --config=experiments/configs/default_wide_k.py --workdir=/tmp/wide_k
"""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "mtrl_default_config", pathlib.Path(__file__).with_name("default.py"))
_default = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_default)


def get_config():
    c = _default.get_config()
    c.data.options = dict(c.data.options, coefficient_range=(-99, 99),
                          test_terms=("123x", "neg127x", "131x"))
    return c
