"""Command line: run one program against its tests by hand.

    python -m mtrl.envs.sandbox --program solution.py --tests tests.py
    python -m mtrl.envs.sandbox --program solution.py --tests check.py --entry-point f

Tests: a file of assert statements (each top-level statement is one test; a file
that does not parse is split into one test per non-empty line), or with
--entry-point a HumanEval-style file defining `check(candidate)` (one test).
Prints one JSON object: `passed` (true only when every test passed), `tests`
(source, status, error_type, message for each), `syntax_error`, `stdout`,
`stderr`, `error`, `wall_s` and the isolation in force. Exit status 0 whatever the
verdict (a program that is not valid source text, e.g. not UTF-8, included); 2 when
the sandbox itself could not run (unreadable files, a slot that failed to start or
died).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib.util
import json
import sys
from typing import Sequence

from mtrl.envs.sandbox.pool import SandboxPool
from mtrl.envs.sandbox.types import Limits, Program


def split_tests(text: str) -> tuple[str, ...]:
    """One test per top-level statement (or per non-empty line if unparsable)."""
    try:
        module = ast.parse(text)
    except SyntaxError:
        return tuple(line for line in (raw.strip() for raw in text.splitlines())
                     if line and not line.startswith("#"))
    return tuple(ast.get_source_segment(text, node, padded=False) or "" for node in module.body)


def read_program(path: str) -> str:
    """The program's text, decoded as Python decodes a source file (UTF-8 or its
    coding declaration). Undecodable bytes stay in as lone surrogates, which no
    compile accepts: the candidate gets a syntax error verdict, as from Python,
    rather than the sandbox failing over a file that is the candidate's doing."""
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return importlib.util.decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return data.decode("utf-8", "surrogateescape")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    defaults = Limits()
    parser = argparse.ArgumentParser(prog="python -m mtrl.envs.sandbox",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--program", required=True, help="file with the candidate code")
    parser.add_argument("--tests", required=True, help="file with the tests")
    parser.add_argument("--entry-point", default=None,
                        help="HumanEval style: the tests define check(candidate)")
    parser.add_argument("--setup", default=None, help="file with trusted setup code")
    parser.add_argument("--candidate-name", action="append", default=[],
                        help="a name the tests must take from the program even if it "
                             "shadows a builtin (repeatable)")
    parser.add_argument("--timeout", type=float, default=defaults.wall_s_per_test,
                        help="wall-clock seconds per test")
    parser.add_argument("--total-timeout", type=float, default=defaults.wall_s_total)
    parser.add_argument("--cpu", type=float, default=defaults.cpu_s, help="CPU seconds")
    parser.add_argument("--memory-mb", type=int, default=defaults.memory_bytes >> 20)
    parser.add_argument("--cache", default=None, help="sqlite result cache file")
    parser.add_argument("--unsafe", action="store_true",
                        help="run even where the jail cannot (untrusted code is then not "
                             "contained; every verdict says UNSAFE)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        code = read_program(args.program)
        with open(args.tests, encoding="utf-8") as handle:
            test_text = handle.read()
        setup = ""
        if args.setup:
            with open(args.setup, encoding="utf-8") as handle:
                setup = handle.read()
        limits = Limits(wall_s_per_test=args.timeout, wall_s_total=args.total_timeout,
                        cpu_s=args.cpu, memory_bytes=args.memory_mb << 20)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        print(json.dumps({"error": f"sandbox could not run: {error}"}))
        return 2
    tests = (test_text,) if args.entry_point else split_tests(test_text)
    program = Program(code=code, tests=tests, setup=setup, entry_point=args.entry_point,
                      candidate_names=tuple(args.candidate_name))
    try:
        with SandboxPool(num_workers=1, limits=limits, cache_path=args.cache,
                         unsafe=args.unsafe) as pool:
            result = pool.submit(program).result()
            isolation = dataclasses.asdict(pool.isolation)
    except Exception as error:  # noqa: BLE001 - any failure here is the sandbox's
        print(json.dumps({"error": f"sandbox could not run: {type(error).__name__}: {error}"}))
        return 2
    print(json.dumps({
        "passed": result.passed,
        "num_passed": result.num_passed,
        "num_tests": len(result.tests),
        "tests": [dataclasses.asdict(test) for test in result.tests],
        "syntax_error": None if result.syntax_error is None else dataclasses.asdict(
            result.syntax_error),
        "stdout": result.stdout,
        "stderr": result.stderr,
        "error": result.error,
        "wall_s": result.wall_s,
        "cached": result.cached,
        "isolation": isolation,
        "isolation_summary": result.isolation,
    }, indent=2))
    return 2 if result.error.startswith("sandbox failure") else 0


if __name__ == "__main__":
    sys.exit(main())
