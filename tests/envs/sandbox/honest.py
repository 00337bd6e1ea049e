"""Honest programs beyond HumanEval and MBPP that the allowlist must let through
(test_allowlist.py runs them; tools/audit_seccomp.py measures them): what an
honest solution may reach for in the standard library."""

from mtrl.envs.sandbox import Limits, Program

ROOMY = Limits(wall_s_per_test=60.0, wall_s_total=90.0, cpu_s=6.0, memory_bytes=1 << 30,
               file_size_bytes=128 << 20)

PROGRAMS = {
    "asyncio": ("import asyncio\nasync def twice(x):\n    await asyncio.sleep(0.001)\n"
                "    return 2 * x\ndef f(xs):\n    async def main():\n"
                "        return await asyncio.gather(*(twice(x) for x in xs))\n"
                "    return asyncio.run(main())\n", "assert f([1, 2]) == [2, 4]"),
    "tempfile_shutil": ("import tempfile, shutil, os, pathlib, glob\ndef f():\n"
                        "    d = tempfile.mkdtemp()\n    p = pathlib.Path(d, 'a.txt')\n"
                        "    p.write_text('x')\n    shutil.copy2(p, os.path.join(d, 'b.txt'))\n"
                        "    shutil.copytree(d, d + '2')\n    os.rename(d + '2', d + '3')\n"
                        "    n = len(glob.glob(d + '3/*'))\n    shutil.rmtree(d)\n"
                        "    shutil.rmtree(d + '3')\n    return n\n", "assert f() == 2"),
    "random_time_hash": ("import random, time, os, datetime, hashlib, uuid\ndef f():\n"
                         "    random.seed(1)\n    time.sleep(0.001)\n    os.urandom(4)\n"
                         "    hashlib.sha256(b'x').hexdigest()\n    uuid.uuid4()\n"
                         "    datetime.datetime.now()\n    return random.randint(1, 1)\n",
                         "assert f() == 1"),
    "threads_and_queues": ("import threading, queue, concurrent.futures as cf\ndef f(n):\n"
                           "    q, lock, out = queue.Queue(), threading.Lock(), []\n"
                           "    def work(i):\n        with lock:\n            out.append(i)\n"
                           "        q.put(i)\n    with cf.ThreadPoolExecutor(4) as pool:\n"
                           "        list(pool.map(work, range(n)))\n"
                           "    return sorted(out) == sorted(q.get() for _ in range(n))\n",
                           "assert f(16)"),
    "stdin_and_prints": ("import sys\ndef f():\n    data = sys.stdin.read()\n"
                         "    print('x' * 10000)\n    sys.stdout.flush()\n    return data\n",
                         "assert f() == ''"),
    "files_and_fds": ("import os, io\ndef f():\n    fd = os.open('a', os.O_CREAT | os.O_RDWR)\n"
                      "    os.write(fd, b'abc')\n    os.fsync(fd)\n    os.ftruncate(fd, 2)\n"
                      "    copy = os.dup(fd)\n    os.set_inheritable(copy, True)\n"
                      "    os.set_blocking(copy, False)\n    os.lseek(copy, 0, 0)\n"
                      "    data = os.read(copy, 10)\n    os.close(copy)\n    os.close(fd)\n"
                      "    r, w = os.pipe()\n    os.write(w, b'p')\n"
                      "    return data, os.read(r, 1), os.stat('a').st_size\n",
                      "assert f() == (b'ab', b'p', 2)"),
}
# Two agents whose main calls its helper from several threads at once.
THREADS_CALLING_AUX = ("import threading\ndef f(xs):\n    out = [None] * len(xs)\n"
                       "    def work(i):\n        out[i] = aux(xs[i])\n"
                       "    threads = [threading.Thread(target=work, args=(i,))\n"
                       "               for i in range(len(xs))]\n"
                       "    for t in threads:\n        t.start()\n"
                       "    for t in threads:\n        t.join()\n    return out\n")
# A program that may start processes (Limits.max_processes > 0) runs another Python.
SUBPROCESS = ("import subprocess, sys\ndef f():\n"
              "    return subprocess.run([sys.executable, '-c', 'print(6 * 7)'],\n"
              "                          capture_output=True, text=True).stdout.strip()\n")
SUBPROCESS_LIMITS = Limits(wall_s_per_test=20.0, wall_s_total=30.0, max_processes=4)


def programs() -> list[tuple[Program, Limits | None]]:
    """Every honest program here, with the limits it runs under."""
    out: list[tuple[Program, Limits | None]] = [
        (Program(code, (test,)), ROOMY) for code, test in PROGRAMS.values()]
    out.append((Program(THREADS_CALLING_AUX, ("assert f([1, 2, 3, 4]) == [2, 4, 6, 8]",),
                        helper_code="def aux(x):\n    return x * 2\n", helper_names=("aux",)),
                None))
    out.append((Program(SUBPROCESS, ("assert f() == '42'",)), SUBPROCESS_LIMITS))
    return out
