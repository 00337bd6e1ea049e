"""Feedback modes: how each agent's last attempt went (docs/design.md, section 3).

A feedback mode is a function `mode(ctx: FeedbackContext) -> tuple[str, ...]`
registered in `FEEDBACK_MODES`; it returns, per agent, the diagnostics and the
revision instruction, never the agent's previous response (whether that is shown
is the history mode's business, see observation.py).

- level_feedback (default): each required function found or missing, syntax OK or
  the error with line and column, tests passed p/n, one line per failing test
  among the shown tests (test, error type, message; capped), and for two agents
  whether the entry point calls `aux` and uses its result.
- level_passed: which reward levels were passed (no test text, no counts).
- passed: whether all tests passed (no test text).
- plain: only the instruction to revise.
- expert_edits: the expert's suggestion (its `needs_expert`); `sandbox_slice` has no effect.

`sandbox_slice` picks the tests whose failures level_feedback shows: 1 the first
test, 0 / None / "all" every test, -k the last k. The reward always uses every
test. "Tests passed p/n" counts the shown tests only (so hidden tests do not leak
their number) unless `FeedbackOptions.count_hidden_tests` is set, when p/n counts
every test while failure lines still come from the shown tests only. When a test that
is neither shown nor counted fails, level_feedback says that hidden tests fail
(without showing them): otherwise "1/1 passed" plus "revise" gives nothing to act on. The task's
full test code, run after its asserts for the reward (Verdict.full_check), is never
shown; it counts as one more test in that p/n.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Union

from mtrl.envs.code.analysis import AUX_NAME
from mtrl.envs.code.prompts import PromptTemplates
from mtrl.envs.code.task import CodeTask
from mtrl.envs.code.verdict import Verdict
from mtrl.envs.sandbox.types import TestResult
from mtrl.envs.sandbox.visible_text import visible
from mtrl.registry import Registry

SandboxSlice = Union[int, str, None]
FEEDBACK_STYLES = ("full", "compact")
# Caps, in UTF-8 bytes, on fields that are not free text but may carry the
# candidate's text all the same: an exception's type name is whatever its class is
# called (a type named "...\n- Tests: 3/3 passed." forged a line), and names come
# from the task.
TYPE_BYTES = 48
NAME_BYTES = 64
# An expert's suggestion (expert_edits), which may quote the candidate's lines.
SUGGESTION_BYTES = 4000
_STATUS_WORDS = {"failed": "FAILED", "error": "ERROR", "timeout": "TIMEOUT"}


def normalize_sandbox_slice(sandbox_slice: SandboxSlice) -> int:
    """Canonical form of `sandbox_slice`: 0 all tests, 1 the first, -k the last k."""
    if sandbox_slice is None or sandbox_slice == "all":
        return 0
    if isinstance(sandbox_slice, int) and not isinstance(sandbox_slice, bool):
        if sandbox_slice <= 1:
            return sandbox_slice
    raise ValueError(
        f"sandbox_slice must be 1 (first test), 0, None or 'all' (every test) or a negative "
        f"integer -k (the last k tests); got {sandbox_slice!r}")


def select_shown_tests(tests: tuple[TestResult, ...], sandbox_slice: SandboxSlice
                       ) -> tuple[TestResult, ...]:
    """The tests the feedback may show, in task order."""
    k = normalize_sandbox_slice(sandbox_slice)
    if k == 0:
        return tests
    if k == 1:
        return tests[:1]
    return tests[k:]


@dataclasses.dataclass(frozen=True)
class FeedbackOptions:
    sandbox_slice: SandboxSlice = 1
    count_hidden_tests: bool = False  # p/n over every test instead of the shown ones
    # Caps in UTF-8 bytes (the unit a context is spent in: a byte tokenizer's tokens,
    # and at least a byte-level BPE's; for ASCII, characters): a failing test's
    # source and an error message are cut to them (_cap).
    max_test_chars: int = 240
    max_message_chars: int = 200
    # "full": sentences; "compact": the same facts in a few short lines, for tiny
    # from-scratch models whose every context byte costs (the embedded default).
    style: str = "full"

    def __post_init__(self):
        normalize_sandbox_slice(self.sandbox_slice)
        if self.style not in FEEDBACK_STYLES:
            raise ValueError(f"FeedbackOptions.style must be one of {FEEDBACK_STYLES}, "
                             f"got {self.style!r}")
        if self.max_test_chars < 16 or self.max_message_chars < 16:
            raise ValueError("FeedbackOptions caps must be at least 16 bytes")


@dataclasses.dataclass(frozen=True)
class FeedbackContext:
    """Everything a feedback mode may look at for one branch."""

    task: CodeTask
    verdict: Verdict
    options: FeedbackOptions
    templates: PromptTemplates
    expert_suggestion: str = ""  # expert_edits only: the expert's text for this program

    @property
    def num_agents(self) -> int:
        return self.verdict.analysis.num_agents

    def revise(self, agent: int) -> str:
        return self.templates.revise_instruction(self.task, self.num_agents, agent)


FeedbackFn = Callable[[FeedbackContext], tuple[str, ...]]
FEEDBACK_MODES: Registry[FeedbackFn] = Registry("feedback mode")


def _cut(text: str, limit: int) -> str:
    """`text` if its UTF-8 is at most `limit` bytes, else its longest prefix of at
    most `limit - 3` bytes (whole characters) and "...": at most `limit` bytes."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: limit - 3].decode("utf-8", "ignore") + "..."


def _cap(text: str, limit: int) -> str:
    """`text` with invisible and reordering characters written out (visible_text),
    on one line (every run of whitespace, line breaks included, is one space) and
    at most `limit` UTF-8 bytes: what it costs a context is bounded whatever its
    characters (a 4-byte character counted as one would cost 4 byte tokens). Every
    field that reaches a prompt or the expert goes through it."""
    return _cut(" ".join(visible(str(text)).split()), limit)


def _name(text: str) -> str:
    return _cap(text, NAME_BYTES)


def _function_line(ctx: FeedbackContext, agent: int | None, owner: int) -> str:
    check = ctx.verdict.analysis.functions[owner]
    if ctx.num_agents == 1 or agent is None:
        whose = ""
    else:
        whose = " (your code)" if owner == agent else " (your teammate's code)"
    if not check.defined:
        state = "MISSING"
    elif not check.returns_value:
        state = "found, but it never returns a value"
    else:
        state = "found, returns a value"
    return f"- Function `{_name(check.name)}`{whose}: {state}."


def _syntax_line(ctx: FeedbackContext, agent: int | None) -> str:
    error = ctx.verdict.analysis.syntax_error
    if error is None:
        return "- Syntax: OK."
    if ctx.num_agents == 1:
        whose = ""
    elif agent is None:
        whose = f" in agent {error.agent + 1}'s code"
    else:
        whose = " in your code" if error.agent == agent else " in your teammate's code"
    message = _cap(error.info.message, ctx.options.max_message_chars)
    return (f"- Syntax: ERROR{whose} at line {error.info.line}, column {error.info.column}: "
            f"{message}.")


def _test_lines(ctx: FeedbackContext) -> list[str]:
    verdict, options = ctx.verdict, ctx.options
    if not verdict.tests_run:
        reason = "the code has a syntax error" if verdict.analysis.syntax_error else "no code"
        return [f"- Tests: not run ({reason})."]
    passed, total, failures = _shown_results(ctx)
    lines = [f"- Tests: {passed}/{total} passed."]
    if _hidden_tests_fail(ctx):
        lines.append("- Hidden tests fail (not shown).")
    lines += [f"  {word}: {_cap(source, options.max_test_chars)} -> {error}"
              for word, source, error in failures]
    if verdict.result.error:
        lines.append(f"- Execution: {_cap(verdict.result.error, options.max_message_chars)}")
    return lines


def _shown_results(ctx: FeedbackContext) -> tuple[int, int, list[tuple[str, str, str]]]:
    """(passed, counted, failures) over the tests `sandbox_slice` shows (p/n over every
    test with count_hidden_tests); a failure is (status word, test source, error)."""
    verdict, options = ctx.verdict, ctx.options
    shown = select_shown_tests(verdict.feedback_tests, options.sandbox_slice)
    counted = verdict.result.tests if options.count_hidden_tests else shown
    failures = []
    for test in shown:
        if test.status == "passed":
            continue
        error = _cap(test.error_type or test.status, TYPE_BYTES)
        if test.message:
            error = f"{error}: {_cap(test.message, options.max_message_chars)}"
        word = _STATUS_WORDS.get(test.status) or _cap(test.status.upper(), TYPE_BYTES)
        failures.append((word, test.source, error))
    return sum(test.status == "passed" for test in counted), len(counted), failures


def _hidden_tests_fail(ctx: FeedbackContext) -> bool:
    """A test the feedback does not show (or count) failed: the shown p/n can read
    "1/1" while the reward says otherwise, so the agent must at least be told."""
    verdict, options = ctx.verdict, ctx.options
    if options.count_hidden_tests or not verdict.tests_run:
        return False  # p/n already counts every test, or nothing ran
    shown = select_shown_tests(verdict.feedback_tests, options.sandbox_slice)
    return any(test.status != "passed" for test in verdict.result.tests
               if all(test is not s for s in shown))


def _helper_use(ctx: FeedbackContext) -> str:
    """How main uses aux: 'missing' | 'rebound' | 'no_call' | 'ignored' | 'thin' |
    'uses' (the entry point's data flow, analysis.helper_usage)."""
    analysis = ctx.verdict.analysis
    helper = analysis.helper
    if not analysis.main.defined or helper is None:
        return "missing"
    if helper.rebound:
        return "rebound"
    if not helper.calls_aux:
        return "no_call"
    if helper.ignored_calls:
        return "ignored"
    return "thin" if helper.thin_wrapper else "uses"


def _helper_line(ctx: FeedbackContext) -> str:
    main, state = _name(ctx.task.entry_point), _helper_use(ctx)
    helper = ctx.verdict.analysis.helper
    if state == "ignored":
        lines = helper.ignored_calls[:3]
        where = ", ".join(str(line) for line in lines)
        return (f"- Helper use: `{main}` calls `{AUX_NAME}` but ignores its result "
                f"(line {where} of the `{main}` code).")
    if state == "rebound":
        return (f"- Helper use: cannot be checked, {_cap(helper.rebound, NAME_BYTES * 2)} "
                f"(the tests may not run the `{main}` that was read).")
    return {
        "missing": f"- Helper use: cannot be checked, `{main}` is missing.",
        "no_call": f"- Helper use: `{main}` does not call `{AUX_NAME}`.",
        "thin": (f"- Helper use: `{main}` calls `{AUX_NAME}` and uses its result, but only "
                 f"returns it without logic of its own."),
        "uses": f"- Helper use: `{main}` calls `{AUX_NAME}` and uses its result.",
    }[state]


@FEEDBACK_MODES.register("level_feedback")
def level_feedback(ctx: FeedbackContext) -> tuple[str, ...]:
    """Full diagnostics for the tests chosen by `sandbox_slice` (module docstring)."""
    if ctx.options.style == "compact":
        return _compact_level_feedback(ctx)
    test_lines = _test_lines(ctx)
    out = []
    for agent in range(ctx.num_agents):
        lines = ["Diagnostics of the previous attempt:"]
        lines += [_function_line(ctx, agent, owner) for owner in range(ctx.num_agents)]
        lines.append(_syntax_line(ctx, agent))
        lines += test_lines
        if ctx.num_agents == 2:
            lines.append(_helper_line(ctx))
        lines += ["", ctx.revise(agent)]
        out.append("\n".join(lines))
    return tuple(out)


def _compact_level_feedback(ctx: FeedbackContext) -> tuple[str, ...]:
    """level_feedback's facts in a few terse lines, the same for every agent:

        aux ok, f ok, syntax ok, tests 0/1
        f uses aux
        FAILED f(-3) == 6
        Revise aux.

    The failing tests come last, just before the revision instruction, so a value
    they carry sits a few tokens before the answer that uses it (a plain assertion
    failure needs no error name; other errors keep theirs)."""
    analysis, verdict, options = ctx.verdict.analysis, ctx.verdict, ctx.options
    words = []
    for check in analysis.functions:
        state = ("MISSING" if not check.defined else
                 "no return" if not check.returns_value else "ok")
        words.append(f"{_name(check.name)} {state}")
    error = analysis.syntax_error
    if error is None:
        words.append("syntax ok")
    else:
        words.append(f"syntax ERROR line {error.info.line} col {error.info.column}: "
                     f"{_cap(error.info.message, options.max_message_chars)}")
    lines = []
    if verdict.tests_run:
        passed, total, failures = _shown_results(ctx)
        words.append(f"tests {passed}/{total}")
        if _hidden_tests_fail(ctx):
            words.append("hidden tests fail")
        lines += [f"{word} {_cap(source.removeprefix('assert ').strip(), options.max_test_chars)}"
                  + ("" if error == "AssertionError" else f": {error}")
                  for word, source, error in failures]
        if verdict.result.error:
            lines.append(f"execution: {_cap(verdict.result.error, options.max_message_chars)}")
    else:
        words.append("tests not run")
    head = [", ".join(words)]
    if ctx.num_agents == 2:
        head.append(_compact_helper_use(ctx))
    body = "\n".join(head + lines)
    return tuple(f"{body}\n{ctx.revise(agent)}" for agent in range(ctx.num_agents))


def _compact_helper_use(ctx: FeedbackContext) -> str:
    main = _name(ctx.task.entry_point)
    return {"missing": f"{main} missing", "rebound": f"{main} cannot be checked",
            "no_call": f"{main} does not call {AUX_NAME}",
            "ignored": f"{main} ignores {AUX_NAME}'s result",
            "thin": f"{main} only returns {AUX_NAME}(...)",
            "uses": f"{main} uses {AUX_NAME}"}[_helper_use(ctx)]


def levels_passed(verdict: Verdict) -> dict[str, bool | None]:
    """Which reward levels the attempt passed; None where a level was not reached."""
    analysis = verdict.analysis
    structure = all(check.ok for check in analysis.functions)
    syntax = analysis.syntax_ok if analysis.main.ok else None
    tests = verdict.all_passed if syntax else None
    levels: dict[str, bool | None] = {"structure": structure, "syntax": syntax, "tests": tests}
    if analysis.num_agents == 2:
        # Reached under the level reward's gate: valid syntax, aux defined, a test passed.
        reached = bool(syntax and analysis.aux and analysis.aux.ok
                       and verdict.tests_run and verdict.result.num_passed > 0)
        helper = analysis.helper
        levels["helper"] = (bool(helper and helper.uses_result and not helper.thin_wrapper
                                 and not helper.rebound) if reached else None)
    return levels


@FEEDBACK_MODES.register("level_passed")
def level_passed(ctx: FeedbackContext) -> tuple[str, ...]:
    """Outcome per reward level, without test text or test counts."""
    names = {"structure": "Level 1 (required functions defined, with a return)",
             "syntax": "Level 2 (syntax)", "tests": "Level 3 (all tests pass)",
             "helper": f"Level 4 (`{_name(ctx.task.entry_point)}` makes real use of "
                       f"`{AUX_NAME}`)"}
    words = {True: "passed", False: "not passed", None: "not reached"}
    lines = ["Outcome of the previous attempt:"]
    lines += [f"- {names[level]}: {words[state]}."
              for level, state in levels_passed(ctx.verdict).items()]
    body = "\n".join(lines)
    return tuple(f"{body}\n\n{ctx.revise(agent)}" for agent in range(ctx.num_agents))


@FEEDBACK_MODES.register("passed")
def passed(ctx: FeedbackContext) -> tuple[str, ...]:
    """Only whether every test passed."""
    outcome = ("The previous attempt passed all tests." if ctx.verdict.all_passed
               else "The previous attempt did not pass all tests.")
    return tuple(f"{outcome}\n\n{ctx.revise(agent)}" for agent in range(ctx.num_agents))


@FEEDBACK_MODES.register("plain")
def plain(ctx: FeedbackContext) -> tuple[str, ...]:
    """No diagnostics: the instruction to revise."""
    return tuple(ctx.revise(agent) for agent in range(ctx.num_agents))


@FEEDBACK_MODES.register("expert_edits")
def expert_edits(ctx: FeedbackContext) -> tuple[str, ...]:
    """The expert's suggested edits for the joint program (same text for every agent;
    each agent's instruction names the function it owns). The suggestion keeps its
    lines and indentation (code), with invisible characters written out and at most
    SUGGESTION_BYTES: it may quote the candidate."""
    suggestion = _cut(visible(ctx.expert_suggestion).strip(), SUGGESTION_BYTES)
    if suggestion:
        head = f"An expert reviewed the previous attempt and suggests these edits:\n{suggestion}"
    else:
        head = "An expert reviewed the previous attempt and had no suggestion."
    return tuple(f"{head}\n\n{ctx.revise(agent)}" for agent in range(ctx.num_agents))


expert_edits.needs_expert = True  # a mode's trait: CodeEnv asks the expert before it runs
def expert_diagnostics(ctx: FeedbackContext, show_tests: bool) -> str:
    """Neutral diagnostics handed to an expert (expert_edits). Without `show_tests`
    the expert learns only whether all tests passed, so no test text can reach the
    agents through its suggestion; with it, every test's failure is listed."""
    lines = [_function_line(ctx, None, owner) for owner in range(ctx.num_agents)]
    lines.append(_syntax_line(ctx, None))
    if show_tests:
        everything = dataclasses.replace(ctx.options, sandbox_slice=0, count_hidden_tests=True)
        lines += _test_lines(dataclasses.replace(ctx, options=everything))
    elif ctx.verdict.tests_run:
        lines.append("- Tests: all passed." if ctx.verdict.all_passed
                     else "- Tests: not all passed.")
    else:
        lines += _test_lines(ctx)
    if ctx.num_agents == 2:
        lines.append(_helper_line(ctx))
    return "\n".join(lines)
