"""Only the standard library is importable in the jail.

With a Debian system Python (prefix /usr) the jail hid only
<prefix>/lib/python3.X/site-packages, while /usr/lib/python3/dist-packages (and
/usr/local/lib/python3.X/dist-packages) stayed visible and importable: installed
packages, and whatever data files they carry, are no part of an honest program's
world and widen what a candidate can reach.
"""

import os
import sysconfig

from mtrl.envs.sandbox import Program, jail

CODE = ("import os, sys, sysconfig\n"
        "STDLIB = (sysconfig.get_paths()['stdlib'], sysconfig.get_paths()['platstdlib'],"
        " STDLIB_OR_HARNESS)\n"
        "def outside():\n    found = []\n"
        "    for path in sys.path + [p for p in EXTRA if p not in sys.path]:\n"
        "        if not path or any(path == s or path.startswith(s + '/') for s in STDLIB):\n"
        "            continue\n"
        "        try:\n            if os.listdir(path):\n                found.append(path)\n"
        "        except OSError:\n            pass\n"
        "    return found\n"
        "def stdlib():\n    import json, sqlite3, decimal, asyncio, csv, unittest\n    return 1\n")
DEBIAN_PATHS = ["/usr/lib/python3/dist-packages", "/usr/local/lib/python3/dist-packages"]


def test_nothing_but_the_standard_library_is_importable(pool):
    version = f"python3.{sysconfig.get_python_version().split('.')[1]}"
    extra = DEBIAN_PATHS + [f"/usr/local/lib/{version}/dist-packages",
                            f"/usr/local/lib/{version}/site-packages",
                            f"/usr/lib/{version}/site-packages"]
    # The harness's own modules (already loaded in the candidate) are the one exception.
    code = f"EXTRA = {extra!r}\nSTDLIB_OR_HARNESS = {jail.HARNESS_ROOT!r}\n" + CODE
    result = pool.submit(Program(code, ("found = outside()\nassert found == [], found",
                                        "assert stdlib() == 1"))).result()
    assert result.passed, result.tests


def test_the_launch_covers_every_non_standard_path_the_interpreter_has():
    hidden = jail.hidden_python_paths()
    _, prefix = jail.interpreter()
    if prefix == "/usr" and os.path.isdir(DEBIAN_PATHS[0]):  # a Debian system Python
        assert DEBIAN_PATHS[0] in hidden
    launch = jail.Launch(["pass"])
    try:
        covered = {launch.argv[i + 1] for i, flag in enumerate(launch.argv) if flag == "--tmpfs"}
    finally:
        launch.close()
    assert set(hidden) <= covered
