"""Hostile programs: each must get a non-pass verdict and leave the pool working.

Every case pairs a hostile candidate with tests it could only pass if its attack
worked (resource exhaustion, escapes, secret or file reading, network, forged
results, reward hacks). After each case a canary program must still pass, and at
the end a fixed batch of ordinary programs must get the same verdicts as before.
"""

import os
import socket
import threading
import time

import pytest

from mtrl.envs.sandbox import Limits, Program, SandboxPool
from mtrl.envs.sandbox.judge_main import MESSAGE_CHARS, TYPE_CHARS

SECRET = "mtrl-fake-secret-7f3a9c"
TARGET = "def add(a, b):\n    return a + b\n"
ADD_TESTS = ("assert add(2, 3) == 5", "assert add(-1, 4) == 3", "assert add(10, 5) == 15")
LIMITS = Limits(wall_s_per_test=0.5, wall_s_total=5.0, cpu_s=2.0, memory_bytes=384 << 20,
                file_size_bytes=1 << 20, output_bytes=4096)

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


@pytest.fixture(scope="module")
def hostile_pool():
    # The secret is in the pool's environment before its slots start.
    os.environ["MTRL_FAKE_SECRET"] = SECRET
    try:
        with SandboxPool(num_workers=2, limits=LIMITS) as pool:
            yield pool
    finally:
        del os.environ["MTRL_FAKE_SECRET"]


BASELINE = [
    Program(TARGET, ADD_TESTS),
    Program("def add(a, b):\n    return a * b\n", ADD_TESTS),
    Program("def add(a, b)\n    return a\n", ADD_TESTS),
    Program("def add(a, b):\n    return a + b + undefined\n", ADD_TESTS),
    Program("def add(a, b):\n    while True:\n        pass\n", ("assert add(1, 1) == 2",)),
]


def verdicts(results):
    return [(r.passed, r.syntax_error, [(t.status, t.error_type) for t in r.tests])
            for r in results]


@pytest.fixture(scope="module")
def baseline(hostile_pool):
    return verdicts(hostile_pool.run_batch(BASELINE))


def assert_pool_alive(pool):
    canary = pool.submit(Program(TARGET, ADD_TESTS)).result()
    assert canary.passed, canary


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


def test_secrets_do_not_reach_the_candidate(hostile_pool):
    code = ("import os\ndef leak():\n    seen = str(dict(os.environ))\n"
            "    for pid in ['self', '1'] + os.listdir('/proc'):\n        try:\n"
            "            seen += open(f'/proc/{pid}/environ', 'rb').read().decode('latin-1')\n"
            "        except OSError:\n            pass\n"
            f"    return {SECRET!r} in seen\n")
    assert os.environ["MTRL_FAKE_SECRET"] == SECRET  # it is in the pool's own environment
    result = hostile_pool.submit(Program(code, ("assert leak() is True",))).result()
    assert result.tests[0].status == "failed", result


def test_candidate_memory_holds_no_test_text(hostile_pool):
    # The scan finds the candidate's own source in its memory (so it works) but
    # never the test's, which only the judge process ever holds.
    code = ("import ctypes, re\nctypes.CDLL(None).prctl(4, 1, 0, 0, 0)\n"
            "# CAND-MARK-1234\n"
            "def scan():\n    own = test = False\n"
            "    with open('/proc/self/maps') as maps, open('/proc/self/mem', 'rb') as mem:\n"
            "        for line in maps:\n            span, perms = line.split()[:2]\n"
            "            if 'r' not in perms:\n                continue\n"
            "            lo, hi = (int(x, 16) for x in span.split('-'))\n            try:\n"
            "                mem.seek(lo)\n                chunk = mem.read(hi - lo)\n"
            "            except (OSError, ValueError, OverflowError):\n                continue\n"
            "            own |= any(int(m[1]) == 1234 for m in re.finditer(rb'CAND-MARK-(\\d{4})', chunk))\n"
            "            test |= any(int(m[1]) == 5678 for m in re.finditer(rb'TEST-MARK-(\\d{4})', chunk))\n"
            "    return own, test\n")
    test = "found = scan()\nassert found == (True, False), found  # TEST-MARK-5678"
    result = hostile_pool.submit(Program(code, (test,))).result()
    assert result.passed, result.tests


def test_files_outside_the_workdir_are_out_of_reach(hostile_pool, tmp_path):
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(SECRET)
    code = ("def read(path):\n    try:\n        return open(path).read()\n"
            "    except OSError as e:\n        return type(e).__name__\n")
    tests = (f"assert read({str(secret_file)!r}) == {SECRET!r}",
             "assert read('/etc/shadow') not in ('PermissionError', 'FileNotFoundError')",
             "assert read('/root/.bashrc') not in ('FileNotFoundError', 'PermissionError')")
    result = hostile_pool.submit(Program(code, tests)).result()
    assert [t.status for t in result.tests] == ["failed"] * 3, result


def test_network_is_unreachable(hostile_pool):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    accepted = []
    listener.settimeout(3.0)

    def accept():
        try:
            accepted.append(listener.accept())
        except OSError:
            pass

    thread = threading.Thread(target=accept)
    thread.start()
    code = ("import socket\ndef connect(port):\n    try:\n"
            "        socket.create_connection(('127.0.0.1', port), timeout=0.5).close()\n"
            "        return 'connected'\n    except OSError as e:\n        return type(e).__name__\n")
    result = hostile_pool.submit(Program(code, (f"assert connect({port}) == 'connected'",))).result()
    thread.join()
    listener.close()
    assert result.tests[0].status == "failed" and not accepted, result


def test_escaped_processes_are_killed(hostile_pool):
    # With forks allowed, children that leave the candidate's process group (new
    # sessions) and spin are still swept once the program ends.
    limits = Limits(wall_s_per_test=1.0, wall_s_total=3.0, cpu_s=2.0,
                    memory_bytes=384 << 20, max_processes=4)
    code = ("import os\ndef add(a, b):\n    made = []\n    for _ in range(20):\n        try:\n"
            "            pid = os.fork()\n        except OSError:\n            break\n"
            "        if pid == 0:\n            os.setsid()\n            while True:\n"
            "                pass\n        made.append(pid)\n    print(*made, flush=True)\n"
            "    return len(made)\n")
    # Each jail runs under a host uid of its own: count what runs under them.
    uids = {_uid(pid) for pid in hostile_pool.slot_python_pids()}
    assert 0 not in uids
    before = _tasks_of(uids)
    result = hostile_pool.submit(Program(code, ("assert add(2, 3) == 5",)), limits).result()
    assert result.tests[0].status == "failed"
    escaped = [int(pid) for pid in result.stdout.split()]  # pids in the candidate's namespace
    assert 1 <= len(escaped) <= limits.max_processes  # RLIMIT_NPROC bounds the bomb
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and _tasks_of(uids) > before:
        time.sleep(0.05)
    assert _tasks_of(uids) <= before
    assert_pool_alive(hostile_pool)


def _uid(pid):
    # From status: /proc/<pid> itself is root's for a non-dumpable process.
    with open(f"/proc/{pid}/status") as handle:
        return int(handle.read().split("\nUid:")[1].split()[0])


def _tasks_of(uids):
    count = 0
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and _uid(name) in uids:
                with open(f"/proc/{name}/stat") as handle:
                    count += handle.read().rsplit(")", 1)[1].split()[0] not in "ZX"
        except OSError:
            continue
    return count


def test_same_verdicts_after_the_attacks(hostile_pool, baseline):
    assert verdicts(hostile_pool.run_batch(BASELINE)) == baseline
    assert baseline[0][0] and not any(v[0] for v in baseline[1:])
    assert hostile_pool.replaced_slots == 0  # no attack took a slot down


# --- issue 13: the classes of attack a hostile-model review got through ----------
# Each list holds variants; every one must be held (no pass) in the jail.

SIBLING = "def add(a, b):\n    return a + b  # the honest sibling\n"
WRONG_ADD = "HONEST_START = 'def add(a, b):\\n    return a + b'\ndef add(a, b):\n    return 0\n"
# Class 1: a program found in memory the candidate inherited (a sibling's).
STEAL_SIBLING = {
    "frame_walk": WRONG_ADD + (
        "import sys\nf = sys._getframe()\nwhile f is not None:\n"
        "    for v in list(f.f_locals.values()):\n"
        "        if isinstance(v, dict) and str(v.get('code', '')).startswith(HONEST_START):\n"
        "            exec(v['code'], globals())\n"
        "    f = f.f_back\n"),
    "gc_scan": WRONG_ADD + (
        "import gc\nfor o in gc.get_objects():\n"
        "    if isinstance(o, dict) and str(o.get('code', '')).startswith(HONEST_START):\n"
        "        exec(o['code'], globals())\n        break\n"),
    "frame_globals": WRONG_ADD + (
        "import sys\nf = sys._getframe()\nwhile f is not None:\n"
        "    for v in list(f.f_globals.values()) + list(f.f_locals.values()):\n"
        "        v = getattr(v, '__dict__', v)\n"
        "        if isinstance(v, dict) and str(v.get('code', '')).startswith(HONEST_START):\n"
        "            exec(v['code'], globals())\n"
        "    f = f.f_back\n"),
}


@pytest.mark.parametrize("name", sorted(STEAL_SIBLING))
def test_candidates_inherit_no_sibling_program(name):
    # One slot: the sibling runs right before, its successor armed meanwhile.
    with SandboxPool(num_workers=1, limits=LIMITS) as pool:
        honest = pool.submit(Program(SIBLING, ADD_TESTS))
        thief = pool.submit(Program(STEAL_SIBLING[name], ADD_TESTS))
        assert honest.result().passed
        assert thief.result().num_passed == 0, thief.result()  # its own add returns 0


PEEK_CALLS = ("import gc, re, sys\ndef f(x):\n    seen = []\n    frame = sys._getframe()\n"
              "    while frame is not None:\n        for v in list(frame.f_locals.values()):\n"
              "            seen += v if isinstance(v, list) else [v]\n"
              "        frame = frame.f_back\n    seen += gc.get_objects()\n"
              "    args = [repr(c.get('args')) for c in seen\n"
              "            if isinstance(c, dict) and c.get('call') == 'f']\n"
              "    return any(int(n) > x for a in args for n in re.findall('[0-9]+', a))\n")


def test_later_calls_reach_the_candidate_one_at_a_time(hostile_pool):
    # It may see the request it answers (and earlier ones), never a later one.
    tests = ("assert f(1)\nf(7)", "assert f(8)\nf(9)\nf(10)", "f(11)\nassert f(12)\nf(13)")
    leak = hostile_pool.submit(Program(PEEK_CALLS, tests)).result()
    assert leak.num_passed == 0, leak


# Class 2: exceptions that would steer the judge's own control flow.
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


# Class 3: IPC and memory that outlive the candidate.
LIBC = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
STASH = {  # (writer, reader): the reader passes only if the writer's stash survived
    "sysv_shm": (
        LIBC + "def add(a, b):\n    i = libc.shmget(0x6d74726c, 4096, 0o1666)\n"
        "    p = libc.shmat(i, None, 0)\n    ctypes.c_int.from_address(p).value = 1\n"
        "    return a + b\n",
        LIBC + "libc.shmat.restype = ctypes.c_void_p\n"
        "def add(a, b):\n    i = libc.shmget(0x6d74726c, 4096, 0o666)\n"
        "    p = libc.shmat(i, None, 0)\n    return a + b if p not in (None, 2**64 - 1) else 0\n"),
    "sysv_msg": (
        LIBC + "def add(a, b):\n    libc.msgget(0x6d74726d, 0o1666)\n    return a + b\n",
        LIBC + "def add(a, b):\n    return a + b if libc.msgget(0x6d74726d, 0o666) >= 0 else 0\n"),
    "dev_shm_file": (
        "def add(a, b):\n    open('/dev/shm/mtrl-answer', 'w').write('ok')\n    return a + b\n",
        "import os\ndef add(a, b):\n"
        "    return a + b if os.path.exists('/dev/shm/mtrl-answer') else 0\n"),
    "tmp_file": (
        "def add(a, b):\n    open('/tmp/mtrl-answer', 'w').write('ok')\n    return a + b\n",
        "import os\ndef add(a, b):\n"
        "    return a + b if os.path.exists('/tmp/mtrl-answer') else 0\n"),
}


@pytest.mark.parametrize("name", sorted(STASH))
def test_nothing_outlives_a_candidate(name):
    writer, reader = STASH[name]
    with SandboxPool(num_workers=1, limits=LIMITS) as pool:
        pool.submit(Program(writer, ADD_TESTS)).result()
        assert pool.submit(Program(reader, ADD_TESTS)).result().num_passed == 0


DENIED_CALLS = {  # expression -> what the kernel must answer (errno EPERM = 1)
    "nested_user_namespace": "libc.unshare(0x10000000)",
    "mount_namespace": "libc.unshare(0x00020000)",
    "tmpfs_mount": "libc.mount(b'none', b'/tmp', b'tmpfs', 0, None)",
    "memfd": "libc.memfd_create(b'x', 0)",
    "keyring_read": "libc.syscall(250, 0, -3, 0, 0, 0)",  # keyctl(GET_KEYRING_ID, session)
    "add_key": "libc.syscall(248, b'user', b'k', b'v', 1, -3)",
    "ptrace_self": "libc.ptrace(0, 0, None, None)",
    "bpf": "libc.syscall(321, 0, None, 0)",
    "io_uring": "libc.syscall(425, 1, None)",
    "userfaultfd": "libc.syscall(323, 0)",
    "clear_parent_death_signal": "libc.prctl(1, 0, 0, 0, 0)",
    "clone_new_net": "libc.syscall(56, 0x40000011, 0, 0, 0, 0)",
}


@pytest.mark.parametrize("name", sorted(DENIED_CALLS))
def test_dangerous_system_calls_fail_inside(hostile_pool, name):
    code = LIBC + (f"def probe():\n    r = {DENIED_CALLS[name]}\n"
                   "    return [r, ctypes.get_errno()]\n")
    result = hostile_pool.submit(Program(code, ("assert probe() == [-1, 1]",))).result()
    assert result.passed, result


def test_tmpfs_and_shm_are_size_capped(hostile_pool):
    code = ("import os\ndef cap(path):\n    s = os.statvfs(path)\n"
            "    return s.f_blocks * s.f_frsize\n")
    result = hostile_pool.submit(Program(code, (
        "assert 0 < cap('/tmp') <= 512 << 20", "assert 0 < cap('/dev/shm') <= 512 << 20"))).result()
    assert result.passed, result


# Class 4: the host, seen from inside.
def test_host_processes_sockets_and_keys_are_invisible(hostile_pool):
    name = f"mtrl-host-socket-{os.getpid()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + name)
    listener.listen(1)
    try:
        code = LIBC + (
            "def cmdlines():\n    found = []\n    for p in os.listdir('/proc'):\n"
            "        try:\n            found.append(open(f'/proc/{p}/cmdline').read())\n"
            "        except OSError:\n            pass\n    return ' '.join(found)\n"
            "def unix():\n    text = ''\n    for p in ['self'] + os.listdir('/proc'):\n"
            "        try:\n            text += open(f'/proc/{p}/net/unix').read()\n"
            "        except OSError:\n            pass\n    return text\n"
            "def keyring():\n    return libc.syscall(250, 0, -3, 0, 0, 0)\n")
        tests = ("assert 'pytest' in cmdlines()", f"assert {name!r} in unix()",
                 "assert keyring() > 0")
        result = hostile_pool.submit(Program(code, tests)).result()
    finally:
        listener.close()
    assert [t.status for t in result.tests] == ["failed"] * 3, result


# Class 5: cleanup that a candidate could make raise (sabotaging its siblings).
TREES = {
    "deep_1500": "import os\ndef add(a, b):\n    for _ in range(1500):\n"
                 "        os.mkdir('d')\n        os.chdir('d')\n    return 0\n",
    "deep_long_names": "import os\ndef add(a, b):\n    for _ in range(200):\n"
                       "        os.mkdir('n' * 250)\n        os.chdir('n' * 250)\n    return 0\n",
    "unreadable_dirs": "import os\ndef add(a, b):\n    os.makedirs('x/y/z')\n"
                       "    open('x/y/z/f', 'w').close()\n    os.chmod('x/y', 0)\n"
                       "    os.chmod('x', 0)\n    return 0\n",
}


@pytest.mark.parametrize("name", sorted(TREES))
def test_hostile_trees_never_fail_a_sibling(name):
    with SandboxPool(num_workers=1, limits=LIMITS) as pool:
        futures = [pool.submit(Program(TREES[name], ADD_TESTS))]
        futures += [pool.submit(Program(TARGET, ADD_TESTS)) for _ in range(3)]
        results = [f.result() for f in futures]
        assert not any(r.error for r in results), [r.error for r in results]
        assert all(r.passed for r in results[1:])


# Class 6: text that is not valid UTF-8 must never leave the sandbox.
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


# Class 7: the harness's compile flags must not leak into candidate or test code.
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


# Honest controls: ordinary programs must still pass in the jail.
HONEST = {
    "prints": ("def f():\n    print('hello', 'é')\n    import sys\n"
               "    print('warn', file=sys.stderr)\n    return 1\n", "assert f() == 1"),
    "stdlib_imports": ("import collections, itertools, functools, heapq, math, re, json, "
                       "random, statistics, datetime, decimal, fractions, string, hashlib, "
                       "bisect, typing, dataclasses, threading, tempfile\n"
                       "def f():\n    return math.isqrt(16) + len(tempfile.gettempdir()) * 0\n",
                       "assert f() == 4"),
    "recursion_500": ("def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\n",
                      "assert f(500) == 500"),
    "allocation_200mb": ("def f():\n    b = bytearray(200 << 20)\n    b[-1] = 1\n"
                         "    return len(b)\n", "assert f() == 200 << 20"),
    "two_seconds": ("import time\ndef f():\n    end, n = time.process_time() + 2.0, 0\n"
                    "    while time.process_time() < end:\n        n += 1\n    return n > 0\n",
                    "assert f()"),
    "files": ("import os\ndef f():\n    open('w.txt', 'w').write('x')\n"
              "    return [open('w.txt').read(), os.listdir('.')]\n",
              "assert f() == ['x', ['w.txt']]"),
}


@pytest.fixture(scope="module")
def honest_pool():
    limits = Limits(wall_s_per_test=8.0, wall_s_total=12.0, cpu_s=6.0, memory_bytes=1 << 30)
    with SandboxPool(num_workers=1, limits=limits) as pool:
        yield pool


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_programs_pass_in_the_jail(honest_pool, name):
    code, test = HONEST[name]
    result = honest_pool.submit(Program(code, (test,))).result()
    assert result.passed, result


# Class 8: a two-agent program's helper runs in a process of its own.
HELPER_ATTACKS = {
    "profile_hook": "import sys\ndef right(a, b):\n    return a + b\nclass Install:\n"
                    "    def hook(frame, event, arg):\n        g = frame.f_globals\n"
                    "        if callable(g.get('add')) and g['add'] is not right:\n"
                    "            g['add'] = right\n    sys.setprofile(hook)\n"
                    "def aux(a, b):\n    return a + b\n",
    "caller_globals": "import sys\ndef right(a, b):\n    return a + b\n"
                      "def aux(a, b):\n    sys._getframe(1).f_globals['add'] = right\n"
                      "    return a + b\n",
    "main_memory": "import os\ndef aux(a, b):\n    try:\n"
                   "        open(f'/proc/{os.getppid()}/mem', 'r+b').close()\n"
                   "        return a + b + 1\n    except OSError:\n        return a + b\n",
    "undo_dumpable": LIBC + "def aux(a, b):\n    return a + b + (libc.prctl(4, 1, 0, 0, 0) == 0)\n",
}


@pytest.mark.parametrize("name", sorted(HELPER_ATTACKS))
def test_helper_code_cannot_rewrite_main(hostile_pool, name):
    main = "def add(a, b):\n    return aux(a, b) - 1\n"  # wrong unless the attack works
    result = hostile_pool.submit(Program(main, ADD_TESTS, helper_code=HELPER_ATTACKS[name],
                                         helper_names=("aux",))).result()
    assert result.num_passed == 0, result
    honest = hostile_pool.submit(Program(
        "def add(a, b):\n    return aux(a, b)\n", ADD_TESTS + ("assert aux(1, 1) == 2",),
        helper_code="def aux(a, b):\n    return a + b\n", helper_names=("aux",))).result()
    assert honest.passed, honest


def test_no_other_process_is_visible_or_writable(hostile_pool):
    # The jail's /proc would show bwrap's init (dumpable: /proc/1/mem writable),
    # the slot, the judge and the candidate armed next; a candidate sees itself only.
    code = ("import os\ndef others():\n    own = str(os.getpid())\n"
            "    return sorted(p for p in os.listdir('/proc') if p.isdigit() and p != own)\n"
            "def writable():\n    found = []\n    for p in ['1', str(os.getppid())] + others():\n"
            "        try:\n            open(f'/proc/{p}/mem', 'r+b').close()\n"
            "            found.append(p)\n        except OSError:\n            pass\n"
            "    return [p for p in found if p != str(os.getpid())]\n")
    result = hostile_pool.submit(Program(code, ("assert others() == []",
                                                "assert writable() == []"))).result()
    assert result.passed, result


def test_candidate_holds_no_capability_and_runs_filtered(hostile_pool):
    code = ("import subprocess, sys\ndef status():\n"
            "    return dict(l.split(':\\t', 1) for l in open('/proc/self/status').read().splitlines()\n"
            "                if ':\\t' in l)\n"
            "def after_exec():\n    return subprocess.run(['/bin/grep', 'Cap', '/proc/self/status'],\n"
            "        capture_output=True, text=True).stdout\n")
    tests = tuple(f"assert status()['{c}'] == '0000000000000000'"
                  for c in ("CapInh", "CapPrm", "CapEff", "CapAmb"))
    tests += ("assert status()['NoNewPrivs'] == '1' and status()['Seccomp'] == '2'",)
    result = hostile_pool.submit(Program(code, tests)).result()
    assert result.passed, result
    limits = Limits(wall_s_per_test=5.0, wall_s_total=8.0, cpu_s=3.0, memory_bytes=384 << 20,
                    max_processes=2)
    exec_test = ("caps = [l.split()[-1] for l in after_exec().splitlines()\n"
                 "        if l.startswith(('CapPrm', 'CapEff'))]\n"
                 "assert caps == ['0000000000000000'] * 2, caps",)
    result = hostile_pool.submit(Program(code, exec_test), limits).result()
    assert result.passed, result
