"""Hostile programs that try to read or reach what lies outside their jail: the pool's
secret, the test text, files outside the working directory, the network, a sibling's
program, later calls, host processes, sockets and keys, other processes' memory, and
(two agents) the main program from the helper's process. Each case passes its tests
only if its attack worked.
"""

import os
import socket
import threading

import pytest

from mtrl.envs.sandbox import Program, SandboxPool
from tests.envs.sandbox.hostile import ADD_TESTS, LIBC, LIMITS, SECRET
from tests.envs.sandbox.hostile import verdicts_match_a_fresh_pool


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


SIBLING = "def add(a, b):\n    return a + b  # the honest sibling\n"
WRONG_ADD = "HONEST_START = 'def add(a, b):\\n    return a + b'\ndef add(a, b):\n    return 0\n"
# Class 1 (docs/sandbox.md): a program found in memory the candidate inherited (a sibling's).
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


# Class 4 (docs/sandbox.md): the host, seen from inside.
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


# Class 8 (docs/sandbox.md): a two-agent program's helper runs in a process of its own.
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


test_verdicts_match_a_fresh_pool = verdicts_match_a_fresh_pool
