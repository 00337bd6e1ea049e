"""syscalls.fork_into: the zygote's one clone per candidate (no intermediate process).

Its child must be the caller's sibling (CLONE_PARENT: the slot, not the zygote, waits
for a candidate) and glibc's cached tid must be the child's own, as after os.fork;
without CLONE_CHILD_SETTID it would still hold the parent's.
"""

import os
import subprocess
import sys
import textwrap

import pytest

CALLER = textwrap.dedent("""
    import os
    from mtrl.envs.sandbox import syscalls
    r, w = os.pipe()
    pid = syscalls.fork_into(0)
    if pid == 0:
        os.write(w, f"{os.getppid()} {syscalls._own_tid_address() is not None}".encode())
        os._exit(7)
    print(pid, os.getpid(), os.read(r, 100).decode() if pid else "", flush=True)
""")


def test_the_child_is_the_callers_sibling_and_glibc_knows_its_tid():
    caller = subprocess.run([sys.executable, "-c", CALLER], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=os.getcwd()), check=True)
    fields = caller.stdout.split()
    if fields[0] == "None":
        pytest.skip("fork_into is not available here (the zygote uses an intermediate)")
    child, caller_pid, child_parent, tid_ok = fields
    assert int(child_parent) == os.getpid() != int(caller_pid)  # our child, not the caller's
    assert tid_ok == "True"
    _, status = os.waitpid(int(child), 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 7
