"""Rebinding detection reads what the code can reach, not only the names it writes:
an attribute reached by a name computed at run time makes the program rebound (no
level-4 points), and extraction keeps no module-level store into an object."""

import pytest

from mtrl.envs.code.analysis import analyze_candidate, helper_usage
from mtrl.envs.code.extraction import extract_code
from mtrl.envs.code.rewards import CodeRewardConfig, level_reward
from mtrl.envs.sandbox.types import ExecutionResult
from mtrl.envs.sandbox.types import TestResult as TR

MAIN = "def f(x):\n    return aux(x) - 7\n\n\ndef _real(x):\n    return aux(x) + 1\n\n\n"
REBINDS = {
    "getattr_built_name": "getattr(_real, '__glob' + 'als__')['f'] = _real",
    "getattr_from_pieces": "getattr(_real, '_' * 2 + 'globals' + '_' * 2)['f'] = _real",
    "attrgetter": "import operator\noperator.attrgetter('__glob' + 'als__')(_real)['f'] = _real",
    "attrgetter_imported": "from operator import attrgetter as get\n"
                           "get('_' * 2 + 'globals' + '_' * 2)(_real)['f'] = _real",
    "methodcaller": "from operator import methodcaller\n"
                    "methodcaller('__getattri' + 'bute__', '__glob' + 'als__')(_real)['f'] = _real",
    "object_getattribute": "object.__getattribute__(_real, '_' * 2 + 'globals' + '_' * 2)"
                           "['f'] = _real",
    "builtins_through_self": "len.__self__.globals()['f'] = _real",
    "main_module": "import __main__\n__main__.f = _real",
    "modules_imported": "from sys import modules\nmodules[_real.__module__].f = _real",
    "match_keyword": "match _real:\n    case object(__globals__=g):\n        g['f'] = _real",
    "formatter_get_field": "import string\n"
                           "string.Formatter().get_field('0.' + '_' * 2 + 'globals' + '_' * 2,"
                           " (_real,), {})[0]['f'] = _real",
    "defaults": "f.__defaults__ = (1,)",
    "pickle": "import pickle\n_x = pickle.loads(b'')",
    "types": "import types\nF = types.FunctionType",
    "string_only": "NAME = '__glob' + 'als__'",
}
HONEST = {
    "operator": "import operator\nfrom functools import reduce\n\n\ndef f(x):\n"
                "    return reduce(operator.add, [aux(x), 1])",
    "itemgetter": "from operator import itemgetter\n\n\ndef f(x):\n"
                  "    return itemgetter(0)([aux(x) + 1])",
    "class": "class Box:\n    '''Holds __init__'s value.'''\n\n    def __init__(self, v):\n"
             "        self.v = v\n\n    def __eq__(self, other):\n        return self.v == other.v\n"
             "\n\ndef f(x):\n    '''Uses aux: see __doc__.'''\n    return Box(aux(x) + 1).v",
    "regex": "import re\n\n\ndef f(x):\n    return int(re.compile('[0-9]+').findall(str(aux(x)))[0])",
    "underscores": "SEP = '_'\n\n\ndef f(x):\n    return int(str(aux(x) + 1) + SEP[:0])",
}


@pytest.mark.parametrize("name", list(REBINDS))
def test_a_name_computed_at_run_time_makes_the_program_rebound(name):
    usage = helper_usage(MAIN + REBINDS[name], "f")
    assert usage.rebound, name
    analysis = analyze_candidate(("def aux(x):\n    return 2 * x", MAIN + REBINDS[name]), "f")
    passed = ExecutionResult(tests=(TR("assert t", "passed", helper_calls=1, derived_answers=1),))
    out = level_reward(analysis, passed, CodeRewardConfig())
    assert out.components["level4_aux_called"] == 0.0
    assert out.components["level4_not_wrapper"] == 0.0


@pytest.mark.parametrize("name", list(HONEST))
def test_honest_code_is_not_rebound(name):
    usage = helper_usage(HONEST[name], "f")
    assert usage.rebound == "" and usage.uses_result, usage


def test_extraction_keeps_no_module_level_store_into_an_object():
    completion = "```python\n" + MAIN + REBINDS["getattr_built_name"] + "\nLIMIT = 10\n```"
    code = extract_code(completion, "f")
    assert "getattr" not in code and "_real" in code and "LIMIT = 10" in code
    twin = extract_code("```python\nA, *B = 1, 2, 3\nC: int = 4\n" + MAIN + "```", "f")
    assert "A, *B = 1, 2, 3" in twin and "C: int = 4" in twin
