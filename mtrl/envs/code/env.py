"""Multi-turn code environment for one agent or two cooperating agents.

One agent writes the entry point. Two agents follow CoMLRL's roles (Liu et al.
2025): agent 1 writes a helper `aux`, agent 2 writes the entry point, which may
call `aux`; the program is their combination (see analysis.py).

A step, for a batch of branches (one joint action each):
1. extract each agent's code from its completion (extraction.py);
2. join the codes and analyse them statically (analysis.py);
3. run EVERY test of every runnable program in one batched sandbox call (programs
   that do not compile, or have no code, are not sent: every test is an error);
   a task with both asserts and its original test code (HumanEval) runs the asserts
   and then the full test code as one last test (`task_program`), because the split
   into asserts drops looped and random checks (HumanEval/44, /53, /151);
4. score with the configured reward (rewards.py, all tests, the full test code
   included, so only a program that passes it gets the top reward and `done`);
5. (expert_edits) ask the expert for suggestions, one batched call;
6. build each agent's next-turn observation with the feedback mode, shaped by the
   history mode: "full" appends the feedback to the agent's context, which already
   holds its response; "last" sets `reset_context` and sends a complete prompt
   (task, previous code, feedback); "feedback" sets it and sends the feedback
   alone (a Markov prompt for tasks whose revision instruction restates what a
   revision needs). Feedback shows the task's asserts, never the
   full test code run after them (`Verdict.feedback_tests`).

Episode ends (mtrl/rollout/environment.py): with `end_on_success`, a step whose program passes
every test ends its episode (`ended`; the generator plays no later turn there), as
UFO's "first success" and outcome-read estimators expect. Without it (the default,
CoMLRL's protocol) an episode runs its T turns and a solved branch keeps revising,
scored every turn: the level reward is a per-turn quality, so ending a solved branch
early would forfeit the later turns' rewards and rank a late solver above an early
one under tree returns.
"""

from __future__ import annotations

import dataclasses
import zlib
from typing import Any, Protocol, Sequence

from mtrl.config.fields import check_bool
from mtrl.envs.base import TurnEnvironment
from mtrl.rollout.environment import RETRY_MESSAGE, StepResult
from mtrl.envs.code.analysis import (AUX_NAME, CandidateAnalysis, agent_programs,
                                     analyze_candidate, role_function_names)
from mtrl.envs.code.experts.base import Expert, ExpertRequest
from mtrl.envs.code.extraction import MAX_COMPLETION_CHARS, decode_completion, extract_code
from mtrl.envs.code.feedback import (FEEDBACK_MODES, FeedbackContext, FeedbackOptions,
                                     SandboxSlice, expert_diagnostics, normalize_sandbox_slice)
from mtrl.envs.code.observation import compose_observation
from mtrl.envs.code.prompts import PromptTemplates
from mtrl.envs.code.rewards import CODE_REWARDS, CodeRewardConfig, max_reward
from mtrl.envs.code.task import CodeTask
from mtrl.envs.code.verdict import Verdict, not_run_result
from mtrl.envs.sandbox.types import ExecutionResult, Limits, Program

HISTORY_MODES = ("full", "last", "feedback")


class BatchExecutor(Protocol):
    """What the environment needs from the sandbox (SandboxPool provides it)."""

    def run_batch(self, programs: list[Program]) -> list[ExecutionResult]: ...


@dataclasses.dataclass(frozen=True)
class CodeEnvConfig:
    num_agents: int = 1  # 1: entry point; 2: agent 1 `aux`, agent 2 the entry point
    feedback_mode: str = "level_feedback"  # a name in FEEDBACK_MODES
    sandbox_slice: SandboxSlice = 1  # tests whose failures feedback shows (feedback.py)
    count_hidden_tests: bool = False  # "tests passed p/n" over all tests, not the shown ones
    history_mode: str = "full"  # "full" | "last" | "feedback"
    reward: str = "level"  # a name in CODE_REWARDS: "level" | "pass_rate"
    reward_config: CodeRewardConfig = CodeRewardConfig()
    limits: Limits = Limits()  # for the sandbox the environment creates itself
    # Where the host cannot run the sandbox's jail, go on without it (SandboxPool
    # unsafe=True: every verdict says UNSAFE) instead of refusing to start.
    sandbox_unsafe: bool = False
    templates: PromptTemplates = PromptTemplates()
    show_teammate_code: bool = False  # two agents: show each agent the other's code
    expert_sees_tests: bool = False  # expert_edits: the expert gets every test's failure
    max_completion_chars: int = MAX_COMPLETION_CHARS
    max_test_chars: int = 240
    max_message_chars: int = 200
    feedback_style: str = "full"  # "full" | "compact" (terse level_feedback, feedback.py)
    end_on_success: bool = False  # passing every test ends the episode (module docstring)

    def __post_init__(self):
        role_function_names(self.num_agents, "f")  # validates num_agents
        FEEDBACK_MODES.get(self.feedback_mode)  # KeyError lists the valid modes
        CODE_REWARDS.get(self.reward)
        normalize_sandbox_slice(self.sandbox_slice)
        if self.history_mode not in HISTORY_MODES:
            raise ValueError(f"history_mode must be one of {HISTORY_MODES}, "
                             f"got {self.history_mode!r}")
        if self.max_completion_chars < 1:
            raise ValueError("max_completion_chars must be positive")
        check_bool("end_on_success", self.end_on_success)
        _ = self.feedback_options  # validates the caps

    @property
    def feedback_options(self) -> FeedbackOptions:
        return FeedbackOptions(sandbox_slice=self.sandbox_slice,
                               count_hidden_tests=self.count_hidden_tests,
                               max_test_chars=self.max_test_chars,
                               max_message_chars=self.max_message_chars,
                               style=self.feedback_style)


@dataclasses.dataclass(frozen=True)
class CodeBranchState:
    """One branch of the rollout tree. Immutable: children share their parent's."""

    task: CodeTask
    turn: int  # turns completed on this branch (0 after reset)
    responses: tuple[tuple[str, ...], ...]  # [agent][turn]: decoded completions
    last_verdict: Verdict | None = None
    ended: bool = False  # end_on_success and its last program passed every test

    def __post_init__(self):
        if self.turn < 0 or any(len(r) != self.turn for r in self.responses):
            raise ValueError("CodeBranchState needs one response per agent per completed turn")


class CodeEnv(TurnEnvironment):
    """Code environment (module docstring). `sandbox` defaults to a SandboxPool the
    environment owns (and closes); `expert` is required by the expert_edits mode."""

    info_keys = frozenset({"correct", "answer_id", "void", "progress"})
    state_type = CodeBranchState

    def __init__(self, config: CodeEnvConfig = CodeEnvConfig(), *,
                 sandbox: BatchExecutor | None = None, expert: Expert | None = None):
        self._feedback = FEEDBACK_MODES.get(config.feedback_mode)
        # A feedback mode's trait (feedback.py): it shows an expert's suggestions.
        self._needs_expert = getattr(self._feedback, "needs_expert", False)
        if self._needs_expert and expert is None:
            raise ValueError(f"feedback_mode {config.feedback_mode!r} needs an expert "
                             "(ReferenceExpert, OpenAICompatibleExpert or LocalModelExpert)")
        self.config = config
        self.num_agents = config.num_agents
        self._sandbox = sandbox
        self._owns_sandbox = sandbox is None
        self._expert = expert
        self._reward = CODE_REWARDS.get(config.reward)

    @property
    def max_reward(self) -> float:
        return max_reward(self.config.reward, self.num_agents, self.config.reward_config)

    def reset(self, task: CodeTask) -> tuple[CodeBranchState, tuple[str, ...]]:
        if not isinstance(task, CodeTask):
            raise TypeError(f"CodeEnv.reset expects a CodeTask, got {type(task).__name__}")
        state = CodeBranchState(task=task, turn=0, responses=((),) * self.num_agents)
        return state, self.config.templates.first_turn(task, self.num_agents)

    def step_branches(self, states: list[CodeBranchState], actions: list[tuple[str, ...]],
                      turn: int) -> list[StepResult]:
        cfg = self.config
        texts = [tuple(decode_completion(a, cfg.max_completion_chars) for a in action)
                 for action in actions]
        analyses = [self._analyze(state.task, action) for state, action in zip(states, texts)]
        results = self._execute(states, analyses)
        verdicts = []
        for state, analysis, (result, ran) in zip(states, analyses, results):
            scored = self._reward(analysis, result, cfg.reward_config)
            verdicts.append(Verdict(analysis=analysis, result=result, reward=scored.reward,
                                    components=dict(scored.components), tests_run=ran,
                                    full_check=has_full_check(state.task)))
        contexts = [FeedbackContext(task=state.task, verdict=verdict,
                                    options=cfg.feedback_options, templates=cfg.templates)
                    for state, verdict in zip(states, verdicts)]
        if self._needs_expert:
            contexts = self._with_suggestions(contexts)
        out = []
        for state, text, verdict, ctx in zip(states, texts, verdicts, contexts):
            feedback = self._feedback(ctx)
            if len(feedback) != self.num_agents:
                raise ValueError(f"feedback mode {cfg.feedback_mode!r} returned "
                                 f"{len(feedback)} texts for {self.num_agents} agents")
            observations = tuple(
                compose_observation(history_mode=cfg.history_mode, task=state.task,
                                    agent=agent, num_agents=self.num_agents,
                                    feedback=feedback[agent], codes=verdict.analysis.codes,
                                    templates=cfg.templates,
                                    show_teammate_code=cfg.show_teammate_code)
                for agent in range(self.num_agents))
            child = CodeBranchState(
                task=state.task, turn=turn,
                responses=tuple(past + (now,) for past, now in zip(state.responses, text)),
                last_verdict=verdict, ended=cfg.end_on_success and verdict.all_passed)
            out.append(StepResult(
                reward=verdict.reward, done=verdict.all_passed, observations=observations,
                state=child, components=verdict.components,
                info=self._info(verdict), reset_context=cfg.history_mode != "full",
                ended=cfg.end_on_success and verdict.all_passed))
        return out

    def retry_observations(self, result: StepResult) -> tuple[str, ...]:
        """The history mode's prompt with the feedback mode's text replaced by the
        retry message and the revision instruction every mode ends with (it names
        the function, and the tiny templates restate the task there)."""
        cfg, state, n = self.config, result.state, self.num_agents
        return tuple(compose_observation(
            history_mode=cfg.history_mode, task=state.task, agent=a, num_agents=n,
            feedback=f"{RETRY_MESSAGE}\n{cfg.templates.revise_instruction(state.task, n, a)}",
            codes=state.last_verdict.analysis.codes, templates=cfg.templates,
            show_teammate_code=cfg.show_teammate_code) for a in range(n))

    def close(self) -> None:
        if self._owns_sandbox and self._sandbox is not None:
            self._sandbox.close()  # type: ignore[attr-defined]
            self._sandbox = None

    def __enter__(self) -> "CodeEnv":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def _analyze(self, task: CodeTask, texts: tuple[str, ...]) -> CandidateAnalysis:
        names = role_function_names(self.num_agents, task.entry_point)
        codes = tuple(extract_code(text, name, self.config.max_completion_chars)
                      for text, name in zip(texts, names))
        return analyze_candidate(codes, task.entry_point)

    def _execute(self, states: Sequence[CodeBranchState], analyses: list[CandidateAnalysis]
                 ) -> list[tuple[ExecutionResult, bool]]:
        """(result, ran) per branch; every runnable program goes in ONE sandbox call."""
        runnable = [i for i, a in enumerate(analyses) if a.syntax_ok and a.program.strip()]
        programs = [_branch_program(states[i].task, analyses[i]) for i in runnable]
        results: dict[int, ExecutionResult] = {}
        if programs:
            executed = self._executor().run_batch(programs)
            if len(executed) != len(programs):
                raise RuntimeError(f"sandbox returned {len(executed)} results for "
                                   f"{len(programs)} programs")
            results = dict(zip(runnable, executed))
        return [(results[i], True) if i in results
                else (not_run_result(task_program(states[i].task, "").tests, analyses[i]), False)
                for i in range(len(analyses))]

    def _executor(self) -> BatchExecutor:
        if self._sandbox is None:
            from mtrl.envs.sandbox import SandboxPool  # the sandbox only when needed

            self._sandbox = SandboxPool(limits=self.config.limits,
                                        unsafe=self.config.sandbox_unsafe)
        return self._sandbox

    def _with_suggestions(self, contexts: list[FeedbackContext]) -> list[FeedbackContext]:
        requests = [ExpertRequest(task=ctx.task, program_code=ctx.verdict.analysis.program,
                                  feedback_text=expert_diagnostics(
                                      ctx, show_tests=self.config.expert_sees_tests),
                                  all_passed=ctx.verdict.all_passed)
                    for ctx in contexts]
        suggestions = self._expert.suggest_batch(requests)  # type: ignore[union-attr]
        if len(suggestions) != len(contexts):
            raise RuntimeError(f"expert returned {len(suggestions)} suggestions for "
                               f"{len(contexts)} programs")
        return [dataclasses.replace(ctx, expert_suggestion=text)
                for ctx, text in zip(contexts, suggestions)]

    @staticmethod
    def _info(verdict: Verdict) -> dict[str, Any]:
        analysis, result = verdict.analysis, verdict.result
        error = analysis.syntax_error
        return {
            "codes": analysis.codes,
            "program": analysis.program,
            "num_passed": result.num_passed,
            "num_tests": len(result.tests),
            "all_passed": verdict.all_passed,
            "correct": verdict.all_passed,  # UFO's per-attempt success (info_keys)
            "answer_id": zlib.crc32(analysis.program.encode()) if analysis.program else 0,
            "void": tuple(not code.strip() for code in analysis.codes),  # SimpleTIR
            "progress": result.num_passed / max(len(result.tests), 1),  # reward recipe
            "tests_run": verdict.tests_run,
            "syntax_error": None if error is None else (error.agent, error.info),
            "sandbox_error": result.error,
            "verdict": verdict,
        }


def has_full_check(task: CodeTask) -> bool:
    """Whether `task_program` runs the task's full test code after its asserts."""
    return bool(task.tests) and task.test_code is not None


def _branch_program(task: CodeTask, analysis: CandidateAnalysis) -> Program:
    """One branch's program; two agents' codes run in separate processes
    (analysis.agent_programs), so the helper cannot rewrite main at run time."""
    if analysis.num_agents == 2:
        main, helper = agent_programs(analysis)
        return task_program(task, main, helper)
    return task_program(task, analysis.program)


def task_program(task: CodeTask, code: str, helper_code: str = "") -> Program:
    """Every test of the task, as the reward and `done` see them.

    Asserts run one by one (per-test feedback, a graded pass rate). When the task also
    has its original test code (HumanEval's `check(candidate)`), that runs as one more,
    last test, calling `check(<entry point>)` in the judge: the asserts are a lossy
    split of it, so without it a program that only passes the kept asserts would be
    rewarded as correct. Tasks with test code alone run it in the sandbox's HumanEval
    mode.
    """
    helper = {"helper_code": helper_code, "helper_names": (AUX_NAME,)} if helper_code else {}
    if task.tests:
        tests = task.tests
        if has_full_check(task):
            tests += (f"{task.test_code.rstrip()}\n\ncheck({task.entry_point})\n",)
        # The entry point may share a builtin's name (MBPP's `sum`): let it shadow.
        return Program(code=code, tests=tests, setup=task.setup,
                       candidate_names=(task.entry_point,), **helper)
    return Program(code=code, tests=(task.test_code or "",), setup=task.setup,
                   entry_point=task.entry_point, **helper)
