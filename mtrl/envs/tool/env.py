"""Tool-integrated reasoning: the agent runs Python in the sandbox, then answers.

Tasks are math word problems (MathTask: the answer is a number in \\boxed{}) or code
tasks (CodeTask, e.g. MBPP: "write and test the function with the tool, then submit
it"). One agent. A step, for a batch of branches:
1. each completion is cleaned (bounded, valid UTF-8) and read (parse.py): an answer,
   a code call, an unclosed fence (invalid call) or a void turn;
2. every call's code, and every code task's submitted program with the task's tests,
   go to the sandbox in ONE batched call (SandboxPool: jailed, time- and
   output-limited). A call runs as a program with the single test `pass`, so an
   exception or a timeout while the code loads is reported;
3. a call's observation is its stdout and stderr, or the error (syntax error, the
   exception's type and message, a timeout), truncated to `max_output_chars` with a
   note saying so;
   With `call_reward` > 0, a math task's call that ran cleanly and printed the
   answer earns that reward on its own turn (MT-GRPO's turn-level reward);
4. an answer ends the episode: reward 1 if it is correct (math: the normalised
   number equals the truth; code: every test of the task passes), else 0. The step
   reports `ended`, and the generator plays no later turn on that branch
   (mtrl/rollout/environment.py);
5. the last turn (`max_turns`) without an answer ends the episode unsolved. `done`
   is true only for a solved episode (evaluation counts `done` as success).

Step info (docs/methods.md): `correct`, `void` (SimpleTIR), `invalid_calls` (a call
that did not run cleanly: unclosed fence, syntax error, exception, timeout),
`progress` (code: the submission's test pass rate; math: 0/1), `answer_id`, `truth`
(math: the answer IGPO scores), plus `kind`, `tool_output`.
"""

from __future__ import annotations

import dataclasses
import re
import zlib
from typing import Any, Protocol

from mtrl.config.fields import check_int, check_number
from mtrl.envs.math.task import MathTask
from mtrl.envs.base import TurnEnvironment
from mtrl.rollout.environment import StepResult
from mtrl.envs.text import decode_completion
from mtrl.envs.code.task import CodeTask
from mtrl.envs.math.answer import normalize_number
from mtrl.envs.sandbox.types import ExecutionResult, Program
from mtrl.envs.tool.parse import TurnAction, parse_turn
from mtrl.envs.tool.prompts import ToolTemplates

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
CALL_TEST = ("pass",)  # one trivial test: the harness reports load-time failures


class BatchExecutor(Protocol):
    def run_batch(self, programs: list[Program]) -> list[ExecutionResult]: ...


@dataclasses.dataclass(frozen=True)
class ToolEnvConfig:
    max_turns: int = 4  # tool turns at most (the rollout's num_turns must not exceed it)
    max_output_chars: int = 600  # tool output shown per call
    max_completion_chars: int = 16_000
    # Turn-level reward of a math task's tool call that ran cleanly and printed the
    # answer (MT-GRPO's verifiable turn reward, Zeng et al. 2025); 0: outcome only.
    call_reward: float = 0.0
    templates: ToolTemplates = ToolTemplates()

    def __post_init__(self):
        for name in ("max_turns", "max_output_chars", "max_completion_chars"):
            check_int(name, getattr(self, name), 1)
        check_number("call_reward", self.call_reward, 0)


@dataclasses.dataclass(frozen=True)
class ToolBranchState:
    task: MathTask | CodeTask
    turn: int = 0
    ended: bool = False  # an answer was given (or the turn limit was reached)
    solved: bool = False  # the answer that ended it was correct
    last_code: str = ""  # the last code the tool ran on this branch


def truncate(text: str, limit: int, templates: ToolTemplates) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + "\n" + templates.truncated.format(shown=limit, total=len(text))


def call_error(result: ExecutionResult) -> str:
    """"" when the call ran cleanly, else what went wrong, in one line."""
    if result.syntax_error is not None:
        e = result.syntax_error
        return f"SyntaxError: {e.message} (line {e.line}, column {e.column})"
    if result.error:
        return result.error
    for test in result.tests:
        if test.status != "passed":
            return f"{test.error_type or test.status}: {test.message}".strip()
    return ""


class ToolEnv(TurnEnvironment):
    """Tool-integrated reasoning environment (module docstring)."""

    state_type = ToolBranchState

    info_keys = frozenset({"correct", "void", "invalid_calls", "progress", "answer_id",
                           "truth"})

    def __init__(self, config: ToolEnvConfig = ToolEnvConfig(), *,
                 sandbox: BatchExecutor | None = None):
        self.config = config
        self.num_agents = 1
        self._sandbox = sandbox
        self._owns_sandbox = sandbox is None

    def reset(self, task) -> tuple[ToolBranchState, tuple[str, ...]]:
        t = self.config.templates
        if isinstance(task, MathTask):
            prompt = t.math.format(question=task.question)
        elif isinstance(task, CodeTask):
            prompt = t.code.format(entry_point=task.entry_point, prompt=task.prompt)
        else:
            raise TypeError(f"ToolEnv.reset expects a MathTask or CodeTask, "
                            f"got {type(task).__name__}")
        return ToolBranchState(task=task), (prompt,)

    def step_branches(self, states: list[ToolBranchState], actions: list[tuple[str, ...]],
                      turn: int) -> list[StepResult]:
        cfg = self.config
        parsed = [parse_turn(decode_completion(a[0], cfg.max_completion_chars))
                  for a in actions]
        programs, where = [], {}
        for i, (state, act) in enumerate(zip(states, parsed)):
            program = self._program(state, act)
            if program is not None:
                where[i] = len(programs)
                programs.append(program)
        results = self._run(programs)
        return [self._result(state, act, turn, results[where[i]] if i in where else None)
                for i, (state, act) in enumerate(zip(states, parsed))]

    def _program(self, state: ToolBranchState, act: TurnAction) -> Program | None:
        if act.kind == "call":
            return Program(code=act.code, tests=CALL_TEST)
        if act.kind == "answer" and isinstance(state.task, CodeTask):
            from mtrl.envs.code.env import task_program
            code = act.code or state.last_code
            return task_program(state.task, code) if code.strip() else None
        return None

    def _run(self, programs: list[Program]) -> list[ExecutionResult]:
        if not programs:
            return []
        if self._sandbox is None:
            from mtrl.envs.sandbox import SandboxPool  # the sandbox only when needed
            self._sandbox = SandboxPool()
        results = self._sandbox.run_batch(programs)
        if len(results) != len(programs):
            raise RuntimeError(f"sandbox returned {len(results)} results for "
                               f"{len(programs)} programs")
        return results

    def _result(self, state: ToolBranchState, act: TurnAction, turn: int,
                result: ExecutionResult | None) -> StepResult:
        t, cfg = self.config.templates, self.config
        task = state.task
        truth = task.answer if isinstance(task, MathTask) else ""
        info: dict[str, Any] = {"kind": act.kind, "truth": truth,
                                "void": (False,), "invalid_calls": 0, "correct": False,
                                "progress": 0.0, "answer_id": 0, "tool_output": ""}
        correct, last_code, ended, call_reward = False, state.last_code, False, 0.0
        if act.kind == "answer":
            ended = True
            if isinstance(task, MathTask):
                value = normalize_number(act.answer)
                correct = value is not None and value == normalize_number(task.answer)
                info["progress"] = float(correct)
                info["answer_id"] = zlib.crc32((value or "").encode())
                observation = t.ended
            else:
                code = act.code or state.last_code
                info["answer_id"] = zlib.crc32(code.encode())
                if result is None:
                    observation = t.no_program
                else:
                    correct = result.passed
                    info["progress"] = result.pass_rate
                    observation = t.ended
        elif act.kind == "call":
            last_code = act.code
            error = call_error(result)
            info["invalid_calls"] = int(bool(error))
            printed = "\n".join(x.rstrip("\n") for x in (result.stdout, result.stderr) if x)
            parts = [truncate(printed, cfg.max_output_chars, t)] if printed else []
            if error:  # the error line is never cut off by the output's truncation
                parts.append(t.error.format(error=error[:300]))
            body = "\n".join(parts)
            info["tool_output"] = body
            observation = t.output.format(output=body) if body else t.no_output
            if cfg.call_reward and not error and isinstance(task, MathTask):
                found = normalize_number(task.answer)
                if any(normalize_number(x) == found for x in _NUMBER.findall(printed)):
                    call_reward = float(cfg.call_reward)
        elif act.kind == "invalid":
            info["invalid_calls"] = 1
            info["void"] = (True,)
            observation = t.invalid
        else:
            info["void"] = (True,)
            observation = t.void
        ended = ended or turn >= cfg.max_turns
        info["correct"] = correct
        child = ToolBranchState(task=task, turn=turn, ended=ended, last_code=last_code,
                                solved=correct)
        return StepResult(reward=float(correct) + call_reward, done=correct, observations=(observation,),
                          state=child, info=info, ended=ended,
                          components=_components(correct, act.kind == "call",
                                                 bool(info["invalid_calls"])))

    def close(self) -> None:
        if self._owns_sandbox and self._sandbox is not None:
            self._sandbox.close()  # type: ignore[attr-defined]
            self._sandbox = None


def _components(correct: bool, call: bool, invalid: bool) -> dict[str, float]:
    return {"correct": float(correct), "tool_call": float(call), "invalid_call": float(invalid)}
