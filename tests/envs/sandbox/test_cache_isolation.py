"""Cached verdicts hold only under the isolation that reached them.

The cache key covered code, tests, set-up, limits and the harness version but not
how the program ran, and the pool served any hit: a pass reached outside the jail
was served to a jailed pool, where the same program fails. The key now carries the
pool's isolation (cache.isolation_identity: jailed or UNSAFE, namespaces, network,
users, filesystem, and the seccomp filters' bytes), so each pool sees only verdicts
reached as it runs programs, and repeats within one pool are still served.
"""

from mtrl.envs.sandbox import Limits, Program, SandboxPool, allowlist, seccomp
from mtrl.envs.sandbox.cache import isolation_identity

LIMITS = Limits(wall_s_per_test=2.0, wall_s_total=10.0, cpu_s=4.0, memory_bytes=384 << 20)
# /proc/sys is an empty directory in the jail's candidates; outside it is the host's.
SEES_PROC_SYS = Program("import os\ndef f():\n    return len(os.listdir('/proc/sys')) > 0\n",
                        ("assert f()",))
# getpid is allowed by the filter; under a narrower one it answers -1 (EPERM).
GETPID = Program("import os\ndef f():\n    return os.getpid() > 0\n", ("assert f()",))


def _run(program: Program, cache_path, **pool_args):
    with SandboxPool(num_workers=1, limits=LIMITS, cache_path=cache_path, **pool_args) as pool:
        return pool.submit(program).result(), pool.submit(program).result(), pool.isolation


def test_a_pass_reached_unjailed_is_not_served_to_a_jailed_pool(tmp_path):
    cache_path = tmp_path / "verdicts.sqlite"
    # use_network_namespace=False runs the slots outside the jail (needs unsafe=True).
    unjailed, repeat, isolation = _run(SEES_PROC_SYS, cache_path, unsafe=True,
                                       use_network_namespace=False)
    assert isolation.unsafe and unjailed.passed and not unjailed.cached, unjailed
    assert repeat.cached and repeat.passed  # served again under the same isolation
    jailed, jailed_repeat, isolation = _run(SEES_PROC_SYS, cache_path)
    assert not isolation.unsafe and not jailed.cached and not jailed.passed, jailed
    assert [t.error_type for t in jailed.tests] == ["AssertionError"]
    assert jailed_repeat.cached and not jailed_repeat.passed
    assert jailed.isolation != unjailed.isolation


def test_a_verdict_reached_under_another_filter_is_not_served(tmp_path, monkeypatch):
    cache_path = tmp_path / "verdicts.sqlite"
    default = _run(GETPID, cache_path)
    assert default[0].passed and default[1].cached, default
    narrower = [name for name in allowlist.CALLS if name != "getpid"]
    monkeypatch.setattr(seccomp, "build_program", lambda: seccomp.build_filter(narrower))
    monkeypatch.setattr(seccomp, "build_no_process_program",
                        lambda: seccomp.build_filter(narrower, no_process=True))
    refused, refused_repeat, _ = _run(GETPID, cache_path)
    assert not refused.cached and not refused.passed, refused
    assert [t.error_type for t in refused.tests] == ["AssertionError"], refused.tests
    assert refused_repeat.cached and not refused_repeat.passed


def test_the_identity_names_the_isolation_and_the_filter_bytes():
    line = "jail=bubblewrap 0.11.0; seccomp=on"
    base = isolation_identity(line, (b"\x01" * 8, b"\x02" * 8))
    assert base == isolation_identity(line, (b"\x01" * 8, b"\x02" * 8))
    assert base.startswith(line)
    others = [isolation_identity("UNSAFE (no jail); " + line, (b"\x01" * 8, b"\x02" * 8)),
              isolation_identity(line, (b"\x01" * 8, b"\x03" * 8)),
              isolation_identity(line, (b"\x01" * 16, b"")),  # the same bytes, split apart
              isolation_identity(line, (b"", b""))]
    assert len({base, *others}) == 5

