"""Each candidate writes into a size- and inode-capped tmpfs of its own.

With one /tmp per slot, cleaned up while the next program already ran, a program
that filled /tmp made the next honest program's write fail with ENOSPC (and that
wrong verdict was cached), and one that left half a million directories (kernel
memory no size cap counts) made an honest program two places later a "sandbox
failure". Now each candidate mounts its own tmpfs in its own mount namespace: the
kernel frees it when the candidate is gone, the slot reaps that before the next
program's clock starts, and a verdict the sandbox itself caused is never cached.
"""

import pytest

from mtrl.envs.sandbox import Limits, Program, SandboxPool, confinement, slot_client
from mtrl.envs.sandbox.cache import ResultCache

LIMITS = Limits(wall_s_per_test=20.0, wall_s_total=30.0, cpu_s=20.0, memory_bytes=512 << 20,
                file_size_bytes=128 << 20)
FILL = ("import os\ndef fill():\n    chunk, n = b'x' * (1 << 20), 0\n    try:\n"
        "        while True:\n            with open(f'f{n}', 'wb') as handle:\n"
        "                handle.write(chunk * 64)\n            n += 1\n"
        "    except OSError as error:\n        return error.errno, n\n")
DIRECTORIES = ("import os\ndef spray(limit):\n    made = 0\n    try:\n"
               "        for i in range(limit):\n            os.mkdir(f'd{i}')\n            made += 1\n"
               "    except OSError as error:\n        return error.errno, made\n    return 0, made\n")
HONEST = {
    "file_100mb": ("def f():\n    with open('/tmp/big', 'wb') as handle:\n"
                   "        for _ in range(100):\n            handle.write(b'y' * (1 << 20))\n"
                   "    import os\n    return os.path.getsize('/tmp/big')\n",
                   "assert f() == 100 << 20"),
    "small_files_10000": ("import os\ndef f():\n    for i in range(10_000):\n"
                          "        with open(f'/tmp/s{i}', 'w') as handle:\n            handle.write('z')\n"
                          "    return len(os.listdir('/tmp'))\n", "assert f() == 10_000"),
}


def test_a_full_tmp_or_an_inode_spray_never_reaches_the_next_program(tmp_path):
    cache_path = tmp_path / "verdicts.sqlite"
    honest = [Program(*HONEST[name][:1], (HONEST[name][1],)) for name in sorted(HONEST)]
    with SandboxPool(num_workers=1, limits=LIMITS, cache_path=cache_path) as pool:
        for attack in (Program(FILL, ("assert fill()[0] == 28",)),  # ENOSPC
                       Program(DIRECTORIES, ("assert spray(600_000)[0] == 28",))):
            hit = pool.submit(attack).result()
            assert hit.passed, hit  # its own tmpfs ran out: capped
            for program in honest:
                result = pool.submit(program).result()
                assert result.passed and not result.error, result
        assert pool.replaced_slots == 0
        assert pool.submit(Program(DIRECTORIES, (
            f"assert spray({confinement.CANDIDATE_TMP_INODES + 1})[1] < "
            f"{confinement.CANDIDATE_TMP_INODES}",))).result().passed


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_tmp_users_pass(name):
    code, test = HONEST[name]
    with SandboxPool(num_workers=1, limits=LIMITS) as pool:
        result = pool.submit(Program(code, (test,))).result()
    assert result.passed, result


def test_a_verdict_the_sandbox_caused_is_not_cached(tmp_path, monkeypatch):
    # A candidate the sandbox could not set up (here: a filter the kernel refuses)
    # exits with SETUP_FAILED_EXIT before any of its code runs; the judge marks its
    # tests as the sandbox's failure, and such a verdict is never cached.
    from mtrl.envs.sandbox import seccomp
    program = Program("def f():\n    return 1\n", ("assert f() == 1",))
    cache_path = tmp_path / "verdicts.sqlite"
    broken = b"\x00" * 8  # one instruction, no return: the kernel refuses it
    monkeypatch.setattr(seccomp, "build_program", lambda: broken)
    monkeypatch.setattr(seccomp, "build_no_process_program", lambda: broken)
    with SandboxPool(num_workers=1, limits=LIMITS, cache_path=cache_path) as pool:
        result = pool.submit(program).result()
    assert result.error.startswith("sandbox failure") and not result.passed, result
    cache = ResultCache(cache_path)
    try:
        assert len(cache) == 0  # under no key
    finally:
        cache.close()


def test_a_candidate_that_exits_like_a_set_up_failure_gets_its_own_verdict(tmp_path):
    # The status alone no longer says "sandbox": a candidate that
    # exits with SETUP_FAILED_EXIT after its set-up said it was done (lifecycle.SET_UP)
    # fails its tests like any exit, and that verdict is cached.
    from mtrl.envs.sandbox import lifecycle
    program = Program(f"import os\nos._exit({lifecycle.SETUP_FAILED_EXIT})\n",
                      ("assert True",))
    cache_path = tmp_path / "verdicts.sqlite"
    with SandboxPool(num_workers=1, limits=LIMITS, cache_path=cache_path) as pool:
        result = pool.submit(program).result()
        again = pool.submit(program).result()
    assert not result.error and not result.passed, result
    assert [(t.status, t.error_type) for t in result.tests] == [("error", "CandidateExited")]
    assert again.cached and again.tests == result.tests


def test_assemble_marks_a_sandbox_caused_test_verdict_as_a_failure():
    program = Program("x = 1", ("assert x == 1", "assert x"))
    frames = [{"id": "p", "ack": 1},
              {"id": "p", "i": 0, "s": "passed", "t": "", "m": ""},
              {"id": "p", "i": 1, "s": "error", "t": "SandboxError", "m": "set-up", "infra": 1},
              {"id": "p", "done": 1, "stdout": "", "stderr": "", "wall_s": 0.1}]
    result, healthy = slot_client.assemble(program, "p", frames, "", False)
    assert healthy and result.error.startswith("sandbox failure")
    forged = [dict(f, infra=0) if "i" in f else f for f in frames]  # no flag: the program's
    assert not slot_client.assemble(program, "p", forged, "", False)[0].error
