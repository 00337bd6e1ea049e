"""Hostile programs: each must get a non-pass verdict and leave the pool working.

Every case pairs a hostile candidate with tests it could only pass if its attack
worked (resource exhaustion, exits and kills, a patched harness, forged results,
reward hacks). After each case a canary program must still pass, and at the end a
fixed batch of ordinary programs must get the same verdicts as before. Also here:
candidate text the judge must fit into valid verdict frames, exceptions that would
steer the judge's control flow, and compile flags that must not leak into candidates.
"""

import pytest

from mtrl.envs.sandbox import Program
from mtrl.envs.sandbox.judge_main import MESSAGE_CHARS, TYPE_CHARS
from tests.envs.sandbox.hostile import (ADD_TESTS, LIMITS, TARGET, assert_pool_alive,
                                        same_verdicts_after_the_attacks)

# name -> candidate code; the tests are ADD_TESTS unless a case says otherwise.
HOSTILE: dict[str, str] = {
    "infinite_loop": "def add(a, b):\n    while True:\n        pass\n",
    "cpu_burn_ignoring_sigxcpu":
        "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"
        "def add(a, b):\n    x = 0\n    while True:\n        x += 1\n",
    "memory_bomb": "def add(a, b):\n    hog = []\n    while True:\n"
                   "        hog.append(bytearray(50 << 20))\n",
    "fork_bomb": "import os\ndef add(a, b):\n    while True:\n        os.fork()\n",
    "thread_bomb": "import threading, time\ndef add(a, b):\n    while True:\n"
                   "        threading.Thread(target=time.sleep, args=(60,)).start()\n",
    "huge_file": "def add(a, b):\n    with open('big.bin', 'wb') as f:\n        while True:\n"
                 "            f.write(b'x' * (1 << 20))\n",
    "many_files": "def add(a, b):\n    handles = [open(f'f{i}', 'w') for i in range(10**6)]\n",
    "huge_stdout": "def add(a, b):\n    while True:\n        print('PASSED ' * 1000)\n",
    "sys_exit_top_level": "import sys\nsys.exit(0)\n",
    "os_exit_top_level": "import os\nos._exit(0)\n",
    "sys_exit_in_call": "import sys\ndef add(a, b):\n    sys.exit(0)\n",
    "os_exit_in_call": "import os\ndef add(a, b):\n    os._exit(0)\n",
    "raise_system_exit": "def add(a, b):\n    raise SystemExit(0)\n",
    "raise_keyboard_interrupt": "def add(a, b):\n    raise KeyboardInterrupt\n",
    "raise_base_exception": "def add(a, b):\n    raise BaseException('stop')\n",
    "kill_parent": "import os, signal\ndef add(a, b):\n    os.kill(os.getppid(), signal.SIGKILL)\n"
                   "    return 0\n",
    "kill_everything": "import os, signal\ndef add(a, b):\n    try:\n        os.kill(-1, signal.SIGKILL)\n"
                       "    except OSError:\n        pass\n    return 0\n",
    "signal_slot_processes":
        "import os, signal\ndef add(a, b):\n    for pid in os.listdir('/proc'):\n"
        "        if pid.isdigit() and int(pid) != os.getpid():\n            try:\n"
        "                os.kill(int(pid), signal.SIGTERM)\n            except OSError:\n"
        "                pass\n    return 0\n",
    "patch_builtins": "import builtins\nbuiltins.AssertionError = type('Nope', (Exception,), {})\n"
                      "builtins.print = lambda *a, **k: None\nbuiltins.__import__ = None\n"
                      "def add(a, b):\n    return 0\n",
    "patch_harness_modules":
        "import sys\nfor name, mod in list(sys.modules.items()):\n"
        "    if name.startswith('mtrl'):\n"
        "        for attr in ('_call', 'to_plain', 'from_plain', 'encode'):\n"
        "            if hasattr(mod, attr):\n"
        "                setattr(mod, attr, lambda *a, **k: {'r': True})\n"
        "def add(a, b):\n    return 0\n",
    "walk_frames_and_gc":
        "import gc, sys\ndef add(a, b):\n    frame = sys._getframe()\n    while frame:\n"
        "        frame.f_globals['__builtins__'] = {}\n        frame = frame.f_back\n"
        "    for obj in gc.get_objects():\n        if isinstance(obj, dict) and 'expected' in obj:\n"
        "            return obj['expected']\n    return 0\n",
    "scan_memory_for_tests":  # wins only if any test text is in this process's memory
        "import ctypes, re\nctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # dumpable: /proc/self/mem opens\n"
        "def add(a, b):\n    pattern = re.compile(rb'add\\((-?\\d+), (-?\\d+)\\) == (-?\\d+)')\n"
        "    found = {}\n    with open('/proc/self/maps') as maps, open('/proc/self/mem', 'rb') as mem:\n"
        "        for line in maps:\n            span, perms = line.split()[:2]\n"
        "            if 'r' not in perms:\n                continue\n"
        "            lo, hi = (int(x, 16) for x in span.split('-'))\n            try:\n"
        "                mem.seek(lo)\n                chunk = mem.read(hi - lo)\n"
        "            except (OSError, ValueError, OverflowError):\n                continue\n"
        "            for m in pattern.finditer(chunk):\n"
        "                found[(int(m[1]), int(m[2]))] = int(m[3])\n"
        "    return found.get((a, b), -999)\n",
    "fake_pass_markers":
        "import os, json\ndef add(a, b):\n    print('PASSED', json.dumps({'passed': True, 'status': 'passed'}))\n"
        "    for fd in range(3, 64):\n        try:\n"
        "            os.write(fd, b'\\x00\\x00\\x00\\x0f{\"s\":\"passed\"}')\n        except OSError:\n"
        "            pass\n    return 0\n",
    "forged_reply_frames":
        "import os, struct\ndef add(a, b):\n    frame = b'{\"r\":7}'\n"
        "    os.write(3, (struct.pack('>I', len(frame)) + frame) * 3)\n    return 7\n",
    "always_equal_object": "class Eq:\n    def __eq__(self, other):\n        return True\n"
                           "    def __ne__(self, other):\n        return False\n"
                           "def add(a, b):\n    return Eq()\n",
    "lying_int_subclass": "class I(int):\n    def __eq__(self, other):\n        return True\n"
                          "    __hash__ = int.__hash__\ndef add(a, b):\n    return I(0)\n",
    "lying_str_and_list": "class S(str):\n    def __eq__(self, o):\n        return True\n"
                          "class L(list):\n    def __eq__(self, o):\n        return True\n"
                          "def add(a, b):\n    return L([S('x')])\n",
    "lying_ne_and_bool": "class B:\n    def __ne__(self, o):\n        return False\n"
                         "    def __bool__(self):\n        return True\ndef add(a, b):\n    return B()\n",
    "outliving_thread": "import threading, os, time\ndef spam():\n    while True:\n"
                        "        os.write(3, b'\\x00\\x00\\x00\\x07{\"r\":7}')\n        time.sleep(0.001)\n"
                        "def add(a, b):\n    threading.Thread(target=spam, daemon=True).start()\n"
                        "    return 0\n",
    "ignore_alarm_and_term":
        "import signal\nfor s in (signal.SIGALRM, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):\n"
        "    signal.signal(s, signal.SIG_IGN)\ndef add(a, b):\n    while True:\n        pass\n",
    "recursion_bomb": "import sys\nsys.setrecursionlimit(10**7)\ndef add(a, b):\n"
                      "    return add(a, b) + 1\n",
    "segfault": "import ctypes\ndef add(a, b):\n    return ctypes.string_at(0)\n",
    "delete_files": "import os, shutil\ndef add(a, b):\n    for path in ('.', '/tmp', '/work', '/root'):\n"
                    "        shutil.rmtree(path, ignore_errors=True)\n    return 0\n",
    "close_own_socket": "import os\ndef add(a, b):\n    for fd in range(3, 64):\n        try:\n"
                        "            os.close(fd)\n        except OSError:\n            pass\n    return 7\n",
    "infinite_generator": "import itertools\ndef add(a, b):\n    return itertools.count()\n",
    "huge_return_value": "def add(a, b):\n    return 'x' * (300 << 20)\n",
    "read_stdin": "def add(a, b):\n    return int(input())\n",
    "shadow_builtins_for_tests": "def all(x):\n    return True\ndef add(a, b):\n    return 0\n",
}


# Cases with their own tests: they pass only if the attack works.
SPECIAL_TESTS: dict[str, tuple[str, ...]] = {
    "shadow_builtins_for_tests": ("assert all([add(2, 3) == 5, add(1, 1) == 2])",),
}


def forged_hello(payload: str) -> str:
    """Top-level code that sends `payload` (a bytes expression) to the judge as its
    greeting, before the real one, and exits."""
    return ("import json, os, struct\n"
            f"m = {payload}\n"
            "os.write(3, struct.pack('>I', len(m)) + m)\nos._exit(0)\n")


# Candidate-controlled text the judge must fit into a whole, valid verdict frame, and
# forged greetings it must neither trust nor crash on. Each gets error verdicts from a
# slot that stays up (no worker replacement, no "sandbox failure").
FRAME_ATTACKS: dict[str, str] = {
    "huge_non_ascii_message": "def add(a, b):\n    raise ValueError('\u00e9' * 800)\n",
    "huge_astral_message": "def add(a, b):\n    raise ValueError('\\U0001F600' * 3000)\n",
    "huge_control_char_message": "def add(a, b):\n    raise ValueError('\\x01' * 5000)\n",
    "huge_exception_class_name":
        "E = type('E' * 10000, (Exception,), {})\ndef add(a, b):\n    raise E('x')\n",
    "huge_non_ascii_class_name":
        "E = type('\u00c9' * 10000, (Exception,), {})\ndef add(a, b):\n    raise E('\u00e9' * 2000)\n",
    "huge_load_error": "raise type('L' * 10000, (Exception,), {})('\u00e9' * 5000)\n",
    "forged_hello_gone_passed": forged_hello("json.dumps({'gone': ['passed', '', '']}).encode()"),
    "forged_hello_gone_malformed": forged_hello("json.dumps({'gone': [1, 2, 3, 4]}).encode()"),
    "forged_hello_huge_load_error":
        forged_hello("json.dumps({'load_error': ['T' * 9000, '\u00e9' * 5000]}).encode()"),
    "forged_hello_load_error_not_a_list": forged_hello("json.dumps({'load_error': 5}).encode()"),
    "forged_hello_huge_syntax_error":
        forged_hello("json.dumps({'syntax_error': [10**3000, -5, '\u00e9' * 5000]}).encode()"),
    "forged_hello_syntax_error_bad_fields":
        forged_hello("json.dumps({'syntax_error': ['x', [], {}]}).encode()"),
    "forged_hello_syntax_error_not_a_list": forged_hello("json.dumps({'syntax_error': 5}).encode()"),
    "forged_hello_names_not_lists": forged_hello("json.dumps({'names': {'add': 5}}).encode()"),
    "forged_hello_names_bad_values": forged_hello(
        "json.dumps({'names': {'add': ['function'], 'r': ['value', {'$range': [0, 1, 0]}], "
        "'q': ['value', {'$fraction': [1, 0]}], 'h': ['value', {'$bytes': 'zz'}]}}).encode()"),
    "forged_hello_deeply_nested": forged_hello("b'[' * 200000"),
    "forged_reply_deeply_nested":
        "import os, struct, time\ndef add(a, b):\n    m = b'[' * 200000\n"
        "    os.write(3, struct.pack('>I', len(m)) + m)\n    time.sleep(0.2)\n    return a + b\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_program_never_passes(hostile_pool, baseline, name):
    tests = SPECIAL_TESTS.get(name, ADD_TESTS)
    result = hostile_pool.submit(Program(HOSTILE[name], tests)).result()
    assert not result.passed, (name, result)
    assert result.num_passed == 0, (name, result.tests)
    assert len(result.stdout) <= LIMITS.output_bytes
    assert_pool_alive(hostile_pool)


@pytest.mark.parametrize("name", sorted(FRAME_ATTACKS))
def test_candidate_text_cannot_break_verdict_frames(hostile_pool, baseline, name):
    before = hostile_pool.replaced_slots
    result = hostile_pool.submit(Program(FRAME_ATTACKS[name], ADD_TESTS)).result()
    assert not result.passed and result.num_passed == 0, (name, result)
    assert result.error == "", (name, result.error)  # no sandbox failure
    for test in result.tests:
        assert test.status == "error", (name, test)
        assert len(test.error_type) <= TYPE_CHARS and len(test.message) <= MESSAGE_CHARS
    if result.syntax_error is not None:
        assert len(result.syntax_error.message) <= MESSAGE_CHARS
    assert hostile_pool.replaced_slots == before, name  # the slot was not replaced
    assert_pool_alive(hostile_pool)


def test_huge_candidate_text_is_truncated_not_dropped(hostile_pool):
    code = ("E = type('Bad' * 5000, (Exception,), {})\n"
            "def add(a, b):\n    raise ValueError('\u00e9' * 800)\n"
            "def sub(a, b):\n    raise E('x' * 100000)\n")
    result = hostile_pool.submit(Program(code, ("assert add(1, 2) == 3",
                                                "assert sub(1, 2) == -1"))).result()
    first, second = result.tests
    assert (first.status, first.error_type) == ("error", "ValueError")
    assert 0 < len(first.message) < 800 and set(first.message) == {"\u00e9"}
    assert second.status == "error" and second.error_type == ("Bad" * 5000)[:TYPE_CHARS]
    assert 0 < len(second.message) <= MESSAGE_CHARS and set(second.message) == {"x"}


# Class 2 (docs/sandbox.md): exceptions that would steer the judge's own control flow.
STOP_ITERATION = "def add(a, b):\n    raise StopIteration\n"
CONTROL_FLOW_TESTS = [
    "assert all(map(add, [1, 2], [3, 4]))",
    "assert not any(map(add, [1], [2]))",
    "assert next(iter(map(add, [1], [2])), 'ok') == 'ok'",
    "assert list(filter(None, map(add, [1], [1]))) == []",
    "assert [x for x in map(add, [1], [2])] == []",
]


@pytest.mark.parametrize("raised", ["StopIteration", "StopIteration('x')",
                                    "StopAsyncIteration"])
def test_control_flow_exceptions_are_candidate_errors(hostile_pool, raised):
    code = f"def add(a, b):\n    raise {raised}\n"
    result = hostile_pool.submit(Program(code, tuple(CONTROL_FLOW_TESTS))).result()
    assert [t.status for t in result.tests] == ["error"] * len(CONTROL_FLOW_TESTS), result
    honest = hostile_pool.submit(Program(
        "def add(a, b):\n    raise ValueError('no')\n",
        ("try:\n    add(1, 2)\n    assert False\nexcept ValueError:\n    pass",))).result()
    assert honest.passed, honest  # ordinary exceptions keep their type


# Class 6 (docs/sandbox.md): text that is not valid UTF-8 must never leave the sandbox.
SURROGATES = {
    "message": "def add(a, b):\n    raise ValueError(chr(0xdc80))\n",
    "type_name": "def add(a, b):\n    raise type(chr(0xd800), (Exception,), {})('x')\n",
    "load_error": "raise ValueError('bad ' + chr(0xdfff))\n",
    "stdout_bytes": "import os\ndef add(a, b):\n    os.write(1, b'\\xff\\xfe' + b'\\xed\\xb2\\x80')\n"
                    "    return 0\n",
}


@pytest.mark.parametrize("name", sorted(SURROGATES))
def test_candidate_text_is_valid_utf8(hostile_pool, name):
    result = hostile_pool.submit(Program(SURROGATES[name], ADD_TESTS)).result()
    assert not result.passed
    for text in [result.stdout, result.stderr, result.error] + [
            part for t in result.tests for part in (t.status, t.error_type, t.message)]:
        text.encode("utf-8")  # raises on a lone surrogate


# Class 7 (docs/sandbox.md): the harness's compile flags must not leak into candidate or
# test code.
@pytest.mark.parametrize("code", [
    "def add(a: Undefined, b) -> AlsoUndefined:\n    return a + b\n",
    "x: Undefined = 1\ndef add(a, b):\n    return a + b\n",
])
def test_candidates_compile_as_plain_python(hostile_pool, code):
    result = hostile_pool.submit(Program(code, ADD_TESTS)).result()
    assert [t.error_type for t in result.tests] == ["NameError"] * 3, result


def test_tests_compile_as_plain_python(hostile_pool):
    test = "def helper(x: Undefined):\n    return x\nassert helper(add(1, 1)) == 2"
    assert hostile_pool.submit(Program(TARGET, (test,))).result().tests[0].status == "error"


test_same_verdicts_after_the_attacks = same_verdicts_after_the_attacks
