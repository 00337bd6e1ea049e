"""Code environments: tasks, code extraction, analysis, rewards, feedback modes,
experts and the multi-turn `CodeEnv` (single agent or CoMLRL's aux + main pair)."""

from mtrl.envs.code.analysis import (AUX_NAME, AgentSyntaxError, CandidateAnalysis,
                                     FunctionCheck, HelperUsage, analyze_candidate,
                                     check_function, function_source, helper_usage,
                                     role_function_names, syntax_error_of)
from mtrl.envs.code.env import (HISTORY_MODES, BatchExecutor, CodeBranchState, CodeEnv,
                                CodeEnvConfig)
from mtrl.envs.code.experts import (Expert, ExpertRequest, LocalModelExpert,
                                    OpenAICompatibleExpert, OpenAIExpertConfig,
                                    ReferenceExpert, build_expert_prompt)
from mtrl.envs.code.extraction import (MAX_COMPLETION_CHARS, decode_completion,
                                       defines_function, extract_code)
from mtrl.envs.code.feedback import (FEEDBACK_MODES, FeedbackContext, FeedbackOptions,
                                     expert_diagnostics, levels_passed,
                                     normalize_sandbox_slice, select_shown_tests)
from mtrl.envs.code.observation import compose_observation
from mtrl.envs.code.prompts import PromptTemplates
from mtrl.envs.code.rewards import (CODE_REWARDS, CodeReward, CodeRewardConfig,
                                    RewardOutput, code_reward, level_reward, max_reward,
                                    pass_rate_reward)
from mtrl.envs.code.task import CodeTask
from mtrl.envs.code.verdict import Verdict, not_run_result

__all__ = [
    "AUX_NAME", "AgentSyntaxError", "BatchExecutor", "CODE_REWARDS", "CandidateAnalysis",
    "CodeReward", "code_reward",
    "CodeBranchState", "CodeEnv", "CodeEnvConfig", "CodeRewardConfig", "CodeTask", "Expert",
    "ExpertRequest", "FEEDBACK_MODES", "FeedbackContext", "FeedbackOptions", "FunctionCheck",
    "HISTORY_MODES", "HelperUsage", "LocalModelExpert", "MAX_COMPLETION_CHARS",
    "OpenAICompatibleExpert", "OpenAIExpertConfig", "PromptTemplates", "ReferenceExpert",
    "RewardOutput", "Verdict", "analyze_candidate", "build_expert_prompt", "check_function",
    "compose_observation", "decode_completion", "defines_function", "expert_diagnostics",
    "extract_code", "function_source", "helper_usage", "level_reward", "levels_passed",
    "max_reward", "normalize_sandbox_slice", "not_run_result", "pass_rate_reward",
    "role_function_names", "select_shown_tests", "syntax_error_of",
]
