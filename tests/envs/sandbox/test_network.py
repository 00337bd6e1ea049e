"""Each candidate's own network namespace and the socket families it may use
(issue 25, item 4).

Kernel socket state outlives the program that made it: a TCP TIME_WAIT entry sits
in /proc/net/tcp for a minute. In one network namespace per slot, a candidate read
bits left by the one before (chained with a pass/fail oracle, a later sample passed
hidden tests it never saw). Each candidate now has a namespace of its own, with its
own loopback that honest servers and clients may use; netlink, packet and vsock
sockets (vsock is not network-namespaced: the VM's port space) are refused.
"""

import errno

from mtrl.envs.sandbox import Limits, Program, SandboxPool

LEAVE_TIME_WAIT = (
    "import socket\ndef leave(n):\n    for _ in range(n):\n"
    "        server = socket.socket()\n        server.bind(('127.0.0.1', 0))\n"
    "        server.listen(1)\n        client = socket.create_connection(server.getsockname())\n"
    "        peer, _ = server.accept()\n        client.close()  # active close: TIME_WAIT here\n"
    "        peer.close()\n        server.close()\n"
    "    return n\n")
READ_SOCKETS = (
    "def entries():\n    count = 0\n    for name in ('tcp', 'tcp6', 'udp', 'udp6', 'unix'):\n"
    "        try:\n            with open('/proc/net/' + name) as table:\n"
    "                count += len(table.read().splitlines()[1:])\n"
    "        except OSError:\n            pass\n    return count\n")


def test_socket_state_does_not_reach_the_next_candidate():
    limits = Limits(wall_s_per_test=5.0, wall_s_total=10.0, cpu_s=5.0, memory_bytes=512 << 20)
    with SandboxPool(num_workers=1, limits=limits) as pool:
        left = pool.submit(Program(LEAVE_TIME_WAIT, ("assert leave(3) == 3",))).result()
        seen = pool.submit(Program(READ_SOCKETS, ("assert entries() == 0",))).result()
    assert left.passed, left  # loopback works inside a candidate
    assert seen.passed, seen  # and nothing of it is visible to the next one


FAMILIES = (
    "import socket\ndef make(family, kind):\n    try:\n"
    "        socket.socket(family, kind).close()\n        return 0\n"
    "    except OSError as error:\n        return error.errno\n"
    "def raw_socket(family):  # the system call with a 64-bit family argument\n"
    "    import ctypes\n    libc = ctypes.CDLL(None, use_errno=True)\n"
    "    fd = libc.syscall(41, ctypes.c_long(family), 1, 0)\n"
    "    return ctypes.get_errno() if fd < 0 else 0\n"
    "def pair():\n    a, b = socket.socketpair()\n    a.sendall(b'x')\n    return b.recv(1)\n")


def test_only_unix_and_inet_socket_families(pool):
    refused = errno.EAFNOSUPPORT
    tests = (f"assert make(16, socket.SOCK_RAW) == {refused}",  # AF_NETLINK
             f"assert make(17, socket.SOCK_RAW) == {refused}",  # AF_PACKET
             f"assert make(40, socket.SOCK_STREAM) == {refused}",  # AF_VSOCK
             f"assert make(38, socket.SOCK_SEQPACKET) == {refused}",  # AF_ALG
             f"assert raw_socket(1 << 32 | 2) == {refused}",  # the kernel would read AF_INET
             "assert make(socket.AF_INET, socket.SOCK_STREAM) == 0",
             "assert make(socket.AF_UNIX, socket.SOCK_STREAM) == 0",
             "assert pair() == b'x'")
    result = pool.submit(Program(FAMILIES, tests, setup="import socket")).result()
    assert result.passed, result.tests


def test_loopback_server_and_client_in_one_candidate(pool):
    code = ("import socket\ndef echo(data):\n    server = socket.socket()\n"
            "    server.bind(('127.0.0.1', 0))\n    server.listen(1)\n"
            "    client = socket.create_connection(server.getsockname(), timeout=2)\n"
            "    peer, _ = server.accept()\n    client.sendall(data)\n"
            "    got = peer.recv(100)\n    for s in (client, peer, server):\n        s.close()\n"
            "    return got\n")
    result = pool.submit(Program(code, ("assert echo(b'ping') == b'ping'",))).result()
    assert result.passed, result.tests
