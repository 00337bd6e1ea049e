"""A slot process's start and main loop (the Slot itself: slot.py).

Started by the pool (slot_client.SlotClient) as a fresh interpreter running
main() with four inherited pipe fds, CONTROL REPORT TESTS RESULTS, and its flags:
it warms the modules candidates commonly use, enters its namespaces
(isolation.prepare_slot), becomes a child subreaper (escaped descendants of a
candidate land here), starts its zygote and judge, says hello and then runs one
program per CONTROL frame until the pool closes that pipe.
"""

from __future__ import annotations

import dataclasses
import os
import select
import signal
import sys

from mtrl.envs.sandbox import codec, isolation, syscalls
from mtrl.envs.sandbox.slot import Slot

# Imported once here so that candidates (which may not be able to read the
# Python installation when the filesystem is masked) and judges get them free.
WARM_MODULES = (
    "array", "bisect", "calendar", "cmath", "collections", "copy", "dataclasses",
    "datetime", "decimal", "enum", "fractions", "functools", "heapq",
    "itertools", "json", "math", "numbers", "operator", "re", "string", "textwrap",
    "time", "typing", "unicodedata", "abc", "contextlib", "io", "collections.abc",
    "struct", "base64", "binascii",
)
# Not warmed on purpose: random, statistics, tempfile (random), hashlib (libcrypto),
# threading, queue: modules that register fork hooks or map large libraries make
# every fork dearer for every candidate; the few candidates that use them import
# them (the Python installation stays readable).
_PR_SET_CHILD_SUBREAPER = 36


def pin_to_cpu(cpu: int) -> None:
    """Keeps this slot and every process it starts (zygote, judge, candidates, which
    inherit the mask) on one CPU. A test's calls ping-pong between judge and
    candidate about a dozen times a program; on one CPU each hand-over is a plain
    context switch, where across CPUs it is a wake-up of another (often idle,
    halted) one. Throughput, not isolation: a candidate may change its own mask.
    Best effort: a CPU outside this process's allowed set is ignored."""
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError:
        pass


def main(argv: list[str]) -> None:
    """argv: CONTROL REPORT TESTS RESULTS [no-netns] [jail] [seccomp=HEX] [noproc=HEX]
    [cpu=N]."""
    control_fd, report_fd, tests_fd, results_fd = (int(x) for x in argv[1:5])
    flags = argv[5:]
    for flag in flags:
        if flag.startswith("cpu="):
            pin_to_cpu(int(flag[4:]))
    filter_program = b"".join(bytes.fromhex(f[8:]) for f in flags if f.startswith("seccomp="))
    no_process_program = b"".join(bytes.fromhex(f[7:]) for f in flags if f.startswith("noproc="))
    for name in WARM_MODULES:
        __import__(name)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    report = isolation.prepare_slot(network_namespace="no-netns" not in flags,
                                    jailed="jail" in flags, seccomp=bool(filter_program))
    isolation.scrub_environment()
    syscalls.prctl(_PR_SET_CHILD_SUBREAPER, 1)
    os.chdir("/")
    slot = Slot(report_fd, tests_fd, results_fd, filter_program, no_process_program)
    slot.start_judge()
    codec.write_fd_frame(report_fd, {"hello": dataclasses.asdict(report), "pid": os.getpid()})
    while True:
        if slot.dying and not select.select([control_fd], [], [], 0)[0]:
            slot.finish_dying()  # idle: clean up now rather than with the next program
        try:
            program = codec.read_fd_frame(control_fd)
        except EOFError:
            slot.shutdown()
            return
        slot.run(program)


if __name__ == "__main__":
    main(sys.argv)
