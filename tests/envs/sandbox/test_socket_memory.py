"""What a candidate's sockets can hold is bounded by a fixed amount.

No memory cgroup counts socket buffers, and a 64 MiB candidate held 312 MB of
queued data behind one listening descriptor: each connection it made and closed
left its data waiting to be accepted, and setsockopt(SO_SNDBUF) let every socket
hold up to twice net.core.wmem_max. Now a candidate's sockets are the channel it
inherits and the socketpairs it makes (no socket, bind, listen, connect, accept,
setsockopt; sendto without an address), each holding what its one peer has in
flight, which the kernel stops at the default send buffer:
confinement.socket_memory_bound per process, whatever the candidate does.
"""

import ast
import errno

import pytest

from mtrl.envs.sandbox import Limits, Program, seccomp
from mtrl.envs.sandbox.confinement import MAX_OPEN_FILES, socket_memory_bound
from tests.envs.sandbox import bpf
from tests.envs.sandbox.test_allowlist import _call

SMALL = Limits(wall_s_per_test=20.0, wall_s_total=40.0, cpu_s=10.0, memory_bytes=64 << 20,
               file_size_bytes=1 << 20, output_bytes=4096)
# Each way of holding socket memory, stopped at CAP (2.5 times the memory limit: far
# past any bound the jail should keep, small enough for a test machine). It reports
# the bytes it queued and, where its sockets stay open, the kernel's own count of
# the memory they hold (SO_MEMINFO's write allocation: the skbs' truesize).
FLOOD = """
import socket, struct
CAP = 160 << 20
def held(sock):
    return struct.unpack('9I', sock.getsockopt(socket.SOL_SOCKET, 55, 36))[2]
def fill(sock, size=65536):
    sock.setblocking(False)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)
    except OSError:
        pass
    chunk, sent = b'x' * size, 0
    while sent < CAP:
        try:
            sent += sock.send(chunk)
        except OSError:
            break
    return sent
def backlog():
    # One listener; each connection queues its data and closes, unaccepted.
    try:
        server = socket.socket(socket.AF_UNIX)
        server.bind('\\0mtrl-flood')
        server.listen(4096)
    except OSError:
        return 0
    sent = 0
    while sent < CAP:
        try:
            client = socket.socket(socket.AF_UNIX)
            client.setblocking(False)
            client.connect('\\0mtrl-flood')
        except OSError:
            break
        sent += fill(client)
        client.close()
    return sent
def pairs(kind, size):
    kept, sent = [], 0
    while sent < CAP:
        try:
            a, b = socket.socketpair(socket.AF_UNIX, kind)
        except OSError:
            break
        kept += [a, b]
        sent += fill(a, size) + fill(b, size)
    return max(sent, sum(map(held, kept)))
def orphans():
    # Each sender closes once its data is queued: the receivers keep the data.
    kept, sent = [], 0
    while sent < CAP:
        try:
            a, b = socket.socketpair()
        except OSError:
            break
        sent += fill(a)
        a.close()
        kept.append(b)
    return sent
def flood():
    default = socket.socketpair()[0].getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
    print((default, {'backlog': backlog(), 'stream': pairs(socket.SOCK_STREAM, 65536),
                     'stream, one byte a send': pairs(socket.SOCK_STREAM, 1),
                     'datagrams': pairs(socket.SOCK_DGRAM, default - 32),
                     'seqpacket': pairs(socket.SOCK_SEQPACKET, 65536),
                     'orphans': orphans()}), flush=True)
"""


def test_a_small_candidate_cannot_hold_more_socket_memory_than_the_bound(pool):
    result = pool.submit(Program(FLOOD, ("flood()",)), SMALL).result()
    assert result.tests[0].status == "passed", result
    default, held = ast.literal_eval(result.stdout.strip())
    bound = socket_memory_bound(default)
    over = {way: size for way, size in held.items() if size > bound or size >= SMALL.memory_bytes}
    assert not over, (bound, held)  # before: 170-500 MB each, 64 MiB limit
    assert held["backlog"] == 0


def test_the_bound_is_fixed_and_below_a_small_limit():
    # With the kernel's default send buffer (net.core.wmem_default = 212,992) a
    # process's sockets hold at most 27 MB, whatever it does.
    assert socket_memory_bound(212_992) == MAX_OPEN_FILES * 2 * 212_992 < SMALL.memory_bytes
    with pytest.raises(ValueError):
        socket_memory_bound(0)


@pytest.mark.parametrize("no_process", [False, True])
def test_the_filter_refuses_what_would_grow_socket_memory(no_process):
    program = (seccomp.build_no_process_program() if no_process
               else seccomp.build_program())
    allow, eperm = (bpf.ALLOW, None), (bpf.ERRNO, errno.EPERM)
    assert _call(program, "socket", 1, 1) == eperm  # AF_UNIX, SOCK_STREAM
    assert _call(program, "socket", 2, 1) == (bpf.ERRNO, errno.EAFNOSUPPORT)
    for name in ("bind", "listen", "connect", "accept", "accept4", "setsockopt"):
        assert _call(program, name, 3, 0, 0) == eperm, name
    assert _call(program, "socketpair", 1, 1) == allow
    assert _call(program, "sendto", 3, 0x1000, 10, 0, 0, 0) == allow  # send(2)
    for address in (0x1000, 1 << 32):  # the whole pointer is compared
        assert _call(program, "sendto", 3, 0x1000, 10, 0, address, 110) == eperm
    for name in ("recvfrom", "getsockopt", "getsockname", "getpeername", "shutdown"):
        assert _call(program, name, 3) == allow, name


ATTEMPTS = """
import errno, socket
def attempt(name):
    try:
        globals()[name]()
        return 0
    except OSError as error:
        return error.errno
def unix_socket():
    socket.socket(socket.AF_UNIX).close()
def datagram_to_a_name():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b'x', '\\0mtrl-name')
def bigger_buffer():
    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
"""


def test_the_kernel_answers_what_the_filter_says(pool):
    tests = tuple(f"assert attempt({name!r}) == errno.EPERM, attempt({name!r})"
                  for name in ("unix_socket", "datagram_to_a_name", "bigger_buffer"))
    result = pool.submit(Program(ATTEMPTS, tests, setup="import errno")).result()
    assert result.passed, [(t.source, t.message) for t in result.tests if t.status != "passed"]


# The honest twin: sockets as honest programs use them, under the same small limit.
HONEST = """
import asyncio, socket, threading
def stream(n):
    # More than any buffer holds, through a socketpair, read by another thread.
    a, b = socket.socketpair()
    got = []
    def read():
        while (chunk := b.recv(1 << 16)):
            got.append(len(chunk))
    reader = threading.Thread(target=read)
    reader.start()
    a.sendall(b'y' * n)
    a.shutdown(socket.SHUT_WR)
    reader.join()
    a.close()
    b.close()
    return sum(got)
def datagrams(n):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    total = 0
    for i in range(n):
        a.send(bytes(i % 256 for _ in range(100)))
        total += len(b.recv(200))
    return total, b.getsockname(), a.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE)
def echo(xs):
    async def main():
        async def twice(x):
            await asyncio.sleep(0)
            return 2 * x
        return await asyncio.gather(*(twice(x) for x in xs))
    return asyncio.run(main())
def large(n):
    block = bytearray(n)
    block[-1] = 7
    return sum(block)
"""


def test_honest_socket_users_pass_under_a_small_limit(pool):
    tests = ("assert stream(8 << 20) == 8 << 20",
             "assert datagrams(1000) == (100000, '', socket.SOCK_DGRAM)",
             "assert echo([1, 2, 3]) == [2, 4, 6]",
             "assert large(24 << 20) == 7")
    result = pool.submit(Program(HONEST, tests, setup="import socket"), SMALL).result()
    assert result.passed, [(t.source, t.message) for t in result.tests if t.status != "passed"]
