"""Math word-problem environment: answer extraction, feedback modes (unary "try again",
correctness, plain) and the multi-turn `MathEnv` for one or N agents."""

from mtrl.envs.math.answer import (answers_match, boxed_contents, extract_answer,
                                   normalize_number)
from mtrl.envs.math.env import (MATH_HISTORY_MODES, MathBranchState, MathEnv, MathEnvConfig,
                                answer_id, team_answer)
from mtrl.envs.math.prompts import MATH_FEEDBACK, FeedbackInput, MathTemplates, first_prompt
from mtrl.envs.math.task import MathTask

__all__ = [
    "MATH_FEEDBACK", "MATH_HISTORY_MODES", "FeedbackInput", "MathBranchState", "MathEnv",
    "MathEnvConfig", "MathTask", "MathTemplates", "answer_id", "answers_match", "boxed_contents",
    "extract_answer", "first_prompt", "normalize_number", "team_answer",
]
