"""The score stage: what a grown tree's rewards and step info become before its
advantages are computed, in order:

  recipe   reward.recipe: every step's reward replaced by the episode's recipe total
           (recipe.py; off: the environment's rewards)
  answers  IGPO on an environment that reports the truth: every step's info gains
           the policies' answer log-probs (answer_probs.py; off otherwise)

Both are functions of the tree (and, for the answers, of the current policies), so
where the tree grew (now, or in the background one step ahead) does not matter.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from mtrl.credit import RewardRecipe
from mtrl.rollout.tree import TreeRollout
from mtrl.training.score.answer_probs import fill_answer_logprobs
from mtrl.training.score.recipe import apply_recipe


@dataclasses.dataclass(frozen=True)
class AnswerScorer:
    """IGPO's teacher-forced answer pass: the policies' graph, tokenizer and format."""

    graphdef: Any
    tokenizer: Any
    turn_format: Any


@dataclasses.dataclass(frozen=True)
class ScoreStage:
    recipe: RewardRecipe | None  # None: the environment's rewards
    answers: AnswerScorer | None  # None: no answer log-probs are needed

    def score(self, tree: TreeRollout, policies: Sequence) -> TreeRollout:
        """The tree with its rewards and info scored (module docstring); `policies`:
        one parameter state per policy."""
        if self.recipe is not None:
            tree = apply_recipe(self.recipe, tree)
        if self.answers is not None:
            a = self.answers
            tree = fill_answer_logprobs(tree, a.graphdef, policies, a.tokenizer, a.turn_format)
        return tree
