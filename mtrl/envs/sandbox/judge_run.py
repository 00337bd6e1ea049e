"""One program in the judge: its setup, the candidate's hello, then every test in order
(the Judge of judge.py runs each test against the candidate)."""

from __future__ import annotations

import builtins
from typing import Any, Callable

from mtrl.envs.sandbox import prefetch
from mtrl.envs.sandbox.judge import Judge
from mtrl.envs.sandbox.remote import CandidateGone

_MAX_POSITION = 10 ** 9  # a syntax error's line or column beyond this is a lie


def run(judge: Judge, setup_code, tests: list[tuple[Any, list[prefetch.StaticCall]]],
        entry_point: str | None, candidate_names: tuple[str, ...] = ()) -> None:
    """One program: setup, the candidate's hello, then every test in order.

    setup_code: compiled setup; tests: (compiled test, its static calls) each;
    candidate_names: Program.candidate_names.
    """
    count = len(tests)
    namespace: dict[str, Any] = {"__name__": "__judge__", "__builtins__": builtins}
    try:
        exec(setup_code, namespace)
    except BaseException as error:
        judge.reap(expect_dead=False)
        judge.fail_all(count, "error", "SetupError", f"{type(error).__name__}: {error}")
        return
    if count and tests[0][1]:  # the candidate reads it as soon as it has loaded
        judge.send_batch(tests[0][1], first=True)
        tests[0] = (tests[0][0], [])
    hello = judge.await_hello()
    if isinstance(hello, CandidateGone):
        judge.fail_all(count, hello.status, hello.error_type, str(hello), hello.infra)
    elif "syntax_error" in hello:
        line, column, message = _fields(hello["syntax_error"], [0, 0, ""])
        line, column = (n if 0 <= n < _MAX_POSITION else 0 for n in (line, column))
        judge.emit(syntax=[line, column, message])
        judge.fail_all(count, "error", "SyntaxError", f"line {line}, column {column}: {message}")
    elif "load_error" in hello:
        error_type, message = _fields(hello["load_error"], ["CandidateError", ""])
        judge.fail_all(count, "error", error_type, message)
    elif not isinstance(hello.get("names"), dict):
        judge.fail_all(count, "error", "CandidateError", "malformed hello from the candidate")
    else:
        stalled = judge.bind(namespace, hello["names"], set(candidate_names) | {entry_point})
        if stalled is not None:
            judge.reap(expect_dead=False)
            judge.fail_all(count, stalled.status, stalled.error_type, str(stalled))
        else:
            for index, (code, calls) in enumerate(tests):
                judge.run_test(index, _test_body(namespace, code, entry_point), calls)
    judge.finish()


def _fields(value: Any, defaults: list) -> list:
    """The first len(defaults) items of a list from the candidate, each replaced by
    its default where missing or of another type: a forged hello gets a verdict,
    never a crash of the judge (a "sandbox failure" for a candidate's doing)."""
    items = list(value[:len(defaults)]) if type(value) is list else []
    items += defaults[len(items):]
    return [item if type(item) is type(default) else default
            for item, default in zip(items, defaults)]


def _test_body(namespace: dict[str, Any], code, entry_point: str | None) -> Callable[[], None]:
    def body() -> None:
        if isinstance(code, SyntaxError):
            raise code
        exec(code, namespace)
        if entry_point is not None:
            if entry_point not in namespace:
                raise NameError(f"name {entry_point!r} is not defined")
            namespace["check"](namespace[entry_point])
    return body
