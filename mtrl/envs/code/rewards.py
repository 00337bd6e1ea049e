"""Rewards for code environments: pass rate and CoMLRL's level reward.

Every reward function has one signature,
    reward_fn(analysis: CandidateAnalysis, result: ExecutionResult,
              config: CodeRewardConfig) -> RewardOutput,
and registers itself in `CODE_REWARDS` with `code_reward(name, maximum=...)`, declaring
its largest raw value (`maximum(num_agents, config)`, before the shift). The reward always uses every test of the
task (the feedback's `sandbox_slice` never reaches it). `RewardOutput.components`
holds the named parts for logging; the parts whose names start with "level" add
up to `components["raw"]`, and `reward = raw - shift`.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

from mtrl.envs.code.analysis import CandidateAnalysis, HelperUsage
from mtrl.envs.sandbox.types import ExecutionResult
from mtrl.registry import Registry


@dataclasses.dataclass(frozen=True)
class CodeRewardConfig:
    """Point values of the level reward, and the shift applied to every code reward.

    Level reward (CoMLRL: Liu et al. 2025, "LLM Collaboration with Multi-Agent
    Reinforcement Learning", github OpenMLRL/CoMLRL, code-generation reward):

      level 1  structure   aux defined with `return <value>` (agent 1)   +aux_defined   0.4
                           entry point defined with `return <value>`     +main_defined  0.6
               -- stop here unless the entry point passed level 1 --
      level 2  syntax      every agent's code compiles                   +syntax        0.5
               -- stop here unless the syntax is valid --
      level 3  tests       pass rate over ALL tests, scaled              +tests * p     1.0
               -- level 4 only with two agents, aux defined, >= 1 test passed --
      level 4  helper      entry point calls aux, and a call returned    +aux_called    0.5
                           a value while a passing test ran
                           ... every call's value reaches every answer   +not_wrapper   1.0
                           given after it, and an answer is not aux's
                           value unchanged
                           ... but some call's value is not used         -ignored_result 0.5

    Level 4 reads what ran and the data flow of main's code: the sandbox counts
    main's calls of aux that returned a value in each test (TestResult.helper_calls:
    a helper that failed to load earns nothing) and the answers main gave that
    differ from every value aux returned during the call (TestResult.derived_answers);
    the analysis (analysis.helper_usage, helper_flow.py, dataflow.py) covers every
    place in main's code that can call aux and says whether each call's value
    reaches every answer of the entry point given after it (an overwritten value, a
    value that reaches only some branches, or a call made outside the entry point's
    flow is unused) and whether main only passes aux's value through. The sandbox
    does not say which call ran, so the bonus needs every call used. An entry point
    the analysis cannot vouch for (rebound after its `def`, reached through
    `globals()`, `getattr` or a name built at run time: rebinding.py; or code past
    the analysis's work budget) earns no level-4 points.

    Maximum: two agents 0.4 + 0.6 + 0.5 + 1.0 + 0.5 + 1.0 = 4.0; one agent (levels
    1-3 for the entry point only) 0.6 + 0.5 + 1.0 = 2.1. The pass-rate reward is the
    fraction of passed tests, maximum 1. Both are reported as `raw - shift`.
    """

    aux_defined: float = 0.4
    main_defined: float = 0.6
    syntax: float = 0.5
    tests: float = 1.0
    aux_called: float = 0.5
    not_wrapper: float = 1.0
    ignored_result: float = 0.5  # a penalty: subtracted
    shift: float = 0.0

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise TypeError(f"CodeRewardConfig.{field.name} must be a number, got {value!r}")
            if field.name != "shift" and value < 0:
                raise ValueError(f"CodeRewardConfig.{field.name} must be >= 0, got {value}")

    def level_max(self, num_agents: int) -> float:
        """Largest raw level reward (before the shift)."""
        if num_agents == 1:
            return self.main_defined + self.syntax + self.tests
        if num_agents == 2:
            return (self.aux_defined + self.main_defined + self.syntax + self.tests
                    + self.aux_called + self.not_wrapper)
        raise ValueError(f"code rewards support 1 or 2 agents, got {num_agents}")


@dataclasses.dataclass(frozen=True)
class RewardOutput:
    reward: float  # raw - shift
    components: Mapping[str, float]  # named parts, "raw", "pass_rate"


RewardFn = Callable[[CandidateAnalysis, ExecutionResult, CodeRewardConfig], RewardOutput]


@dataclasses.dataclass(frozen=True)
class CodeReward:
    """A CODE_REWARDS entry, called like its function: `fn` and its `maximum`
    (num_agents, config) -> the largest raw value it returns, before the shift."""

    fn: RewardFn
    maximum: Callable[[int, CodeRewardConfig], float]

    def __call__(self, analysis: CandidateAnalysis, result: ExecutionResult,
                 config: CodeRewardConfig) -> RewardOutput:
        return self.fn(analysis, result, config)


CODE_REWARDS: Registry[CodeReward] = Registry("code reward")


def code_reward(name: str, *, maximum: Callable[[int, CodeRewardConfig], float]):
    """Decorator: registers a reward function in CODE_REWARDS with its maximum."""

    def add(fn: RewardFn) -> RewardFn:
        CODE_REWARDS.register(name)(CodeReward(fn, maximum))
        return fn

    return add


def max_reward(name: str, num_agents: int, config: CodeRewardConfig) -> float:
    """The largest value reward `name` can return (shift applied)."""
    return CODE_REWARDS.get(name).maximum(num_agents, config) - config.shift


@code_reward("pass_rate", maximum=lambda num_agents, config: 1.0)  # every test passed
def pass_rate_reward(analysis: CandidateAnalysis, result: ExecutionResult,
                     config: CodeRewardConfig) -> RewardOutput:
    """Fraction of the task's tests that passed: r = passed / total (0 with no tests)."""
    del analysis  # the verdict alone decides
    rate = result.pass_rate if result.syntax_error is None else 0.0
    components = {"pass_rate": rate, "raw": rate, "shift": config.shift}
    return RewardOutput(reward=rate - config.shift, components=components)


@code_reward("level", maximum=lambda num_agents, config: config.level_max(num_agents))
def level_reward(analysis: CandidateAnalysis, result: ExecutionResult,
                 config: CodeRewardConfig) -> RewardOutput:
    """CoMLRL's level reward; the table is in `CodeRewardConfig`'s docstring."""
    two_agents = analysis.num_agents == 2
    parts = {"level1_aux_defined": 0.0, "level1_main_defined": 0.0, "level2_syntax": 0.0,
             "level3_tests": 0.0}
    if two_agents:
        parts.update({"level4_aux_called": 0.0, "level4_not_wrapper": 0.0,
                      "level4_ignored_result": 0.0})
    else:
        del parts["level1_aux_defined"]
    rate = 0.0
    aux = analysis.aux
    if aux is not None and aux.ok:
        parts["level1_aux_defined"] = config.aux_defined
    if analysis.main.ok:
        parts["level1_main_defined"] = config.main_defined
        if analysis.syntax_ok and result.syntax_error is None:
            parts["level2_syntax"] = config.syntax
            rate = result.pass_rate
            parts["level3_tests"] = config.tests * rate
            helper = analysis.helper
            if two_agents and aux is not None and aux.ok and helper is not None:
                parts.update(_helper_parts(helper, result, config))
    raw = sum(parts.values())
    components = dict(parts, pass_rate=rate, raw=raw, shift=config.shift)
    return RewardOutput(reward=raw - config.shift, components=components)


def _helper_parts(helper: HelperUsage, result: ExecutionResult, config: CodeRewardConfig
                  ) -> dict[str, float]:
    """Level 4 (the table in CodeRewardConfig's docstring): what the entry point's
    code does with aux (static data flow) and what ran (the sandbox's counts over
    the tests that passed)."""
    passed = [t for t in result.tests if t.status == "passed"]
    if helper.rebound or not helper.calls_aux or not any(t.helper_calls for t in passed):
        return {}
    parts = {"level4_aux_called": config.aux_called}
    # Which call ran is not reported, so one unused call anywhere withholds the bonus.
    if (helper.uses_result and not helper.thin_wrapper
            and any(t.derived_answers for t in passed)):
        parts["level4_not_wrapper"] = config.not_wrapper
    if helper.ignored_calls:
        parts["level4_ignored_result"] = -config.ignored_result
    return parts
