"""Socket state a candidate could leave for the next one.

Kernel socket state outlives the program that made it: a TCP TIME_WAIT entry sits
in /proc/net/tcp for a minute. In the network namespace a slot's candidates share, a
candidate read bits left by the one before (chained with a pass/fail oracle, a later
sample passed hidden tests it never saw). Candidates now get unix socketpairs only (no
inet, vsock, netlink or packet sockets: EAFNOSUPPORT; no socket to bind, listen on or
connect: EPERM) and no sendmsg (descriptors in
flight keep a socket and its abstract name alive past every process); the slot
reaps a candidate, and with it all its sockets, before the next one starts.
"""

import errno

from mtrl.envs.sandbox import Limits, Program, SandboxPool

LEAVE_STATE = (
    "import socket\ndef leave():\n    left = []\n"
    "    try:\n        server = socket.socket()\n        server.bind(('127.0.0.1', 0))\n"
    "        server.listen(1)\n        client = socket.create_connection(server.getsockname())\n"
    "        client.close()  # an active close leaves TIME_WAIT\n        left.append('tcp')\n"
    "    except OSError:\n        pass\n"
    "    try:\n        relay = socket.socket(socket.AF_UNIX)\n        relay.bind('\\0mtrl-relay')\n"
    "        relay.listen(1)\n        globals()['held'] = relay\n        left.append('named')\n"
    "    except OSError:\n        pass\n"
    "    try:\n        keep, (a, b) = socket.socketpair(), socket.socketpair()\n"
    "        a.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(memoryview(__import__('array').array('i', [keep[0].fileno(), b.fileno()]))))])\n"
    "        left.append('in flight')\n"
    "    except OSError:\n        pass\n"
    "    return left\n")
READ_STATE = (
    "import socket\ndef entries():\n    count = 0\n    for name in ('tcp', 'tcp6', 'udp', 'udp6'):\n"
    "        try:\n            with open('/proc/net/' + name) as table:\n"
    "                count += len(table.read().splitlines()[1:])\n"
    "        except OSError:\n            pass\n    return count\n"
    "def named():\n    with open('/proc/net/unix') as table:\n"
    "        return [line for line in table.read().splitlines()[1:] if 'mtrl-relay' in line]\n"
    "def reach():\n    try:\n        s = socket.socket(socket.AF_UNIX)\n"
    "        s.connect('\\0mtrl-relay')\n        return 'connected'\n"
    "    except OSError as error:\n        return error.errno\n")


def test_socket_state_does_not_reach_the_next_candidate():
    limits = Limits(wall_s_per_test=5.0, wall_s_total=10.0, cpu_s=5.0, memory_bytes=512 << 20)
    with SandboxPool(num_workers=1, limits=limits) as pool:
        left = pool.submit(Program(LEAVE_STATE, ("assert leave() == []",))).result()
        seen = pool.submit(Program(READ_STATE, ("assert entries() == 0", "assert named() == []",
                                                f"assert reach() == {errno.EPERM}"))).result()
    # Neither TIME_WAIT, nor a named socket, nor descriptors in flight could be made.
    assert left.passed, left
    assert seen.passed, seen.tests  # and nothing of it is visible to the next candidate


FAMILIES = (
    "import socket\ndef make(family, kind):\n    try:\n"
    "        socket.socket(family, kind).close()\n        return 0\n"
    "    except OSError as error:\n        return error.errno\n"
    "def raw_socket(family):  # the system call with a 64-bit family argument\n"
    "    import ctypes\n    libc = ctypes.CDLL(None, use_errno=True)\n"
    "    fd = libc.syscall(41, ctypes.c_long(family), 1, 0)\n"
    "    return ctypes.get_errno() if fd < 0 else 0\n"
    "def pair():\n    a, b = socket.socketpair()\n    a.sendall(b'x')\n    return b.recv(1)\n")


def test_only_unix_sockets(pool):
    refused = errno.EAFNOSUPPORT
    tests = (f"assert make(socket.AF_INET, socket.SOCK_STREAM) == {refused}",
             f"assert make(socket.AF_INET6, socket.SOCK_DGRAM) == {refused}",
             f"assert make(16, socket.SOCK_RAW) == {refused}",  # AF_NETLINK
             f"assert make(17, socket.SOCK_RAW) == {refused}",  # AF_PACKET
             f"assert make(40, socket.SOCK_STREAM) == {refused}",  # AF_VSOCK
             f"assert make(38, socket.SOCK_SEQPACKET) == {refused}",  # AF_ALG
             f"assert raw_socket(1 << 32 | 1) == {refused}",  # the kernel would read AF_UNIX
             # Unix sockets only in pairs: nothing to bind, listen on or connect.
             f"assert make(socket.AF_UNIX, socket.SOCK_STREAM) == {errno.EPERM}",
             "assert pair() == b'x'")
    result = pool.submit(Program(FAMILIES, tests, setup="import socket")).result()
    assert result.passed, result.tests


def test_honest_unix_socket_users_still_work(pool):
    # asyncio's event loop wakes itself through a socketpair.
    code = ("import asyncio\nasync def twice(x):\n    await asyncio.sleep(0)\n    return 2 * x\n"
            "def f(xs):\n    async def main():\n"
            "        return await asyncio.gather(*(twice(x) for x in xs))\n"
            "    return asyncio.run(main())\n")
    result = pool.submit(Program(code, ("assert f([1, 2, 3]) == [2, 4, 6]",))).result()
    assert result.passed, result.tests
