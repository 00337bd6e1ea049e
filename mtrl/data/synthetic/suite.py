"""The integer-function family as a task suite (mtrl.data.suite).

Everything specific to the family lives here or in its modules: the splits (train,
"heldout" = validation, and a test split: terms and offsets outside both, or with
the `iid_test` option held-out functions drawn like validation's, the former then
being the extra test split "ood_test", suite.extra_test_splits), the
`tiny` templates with the helper's short revision instruction, and the SFT teacher
(first guess, revisions scored by the environment, resubmissions). The splits and
the demonstrations come from one `make_splits` call with one seed
(data.options.seed, else the run's seed), so SFT never sees a validation or test
function.
"""

from __future__ import annotations

import dataclasses
import functools

from mtrl.data.demonstrations import per_agent, revision_pairs
from mtrl.data.suite import SUITES, DataConfig, check_split, default_templates
from mtrl.data.synthetic.demonstrations import (check_first_guess, revision_demonstrations,
                                                sft_demonstrations)
from mtrl.data.synthetic.family import FamilyConfig
from mtrl.data.synthetic.prompts import TINY_PROMPT_TEMPLATES
from mtrl.data.synthetic.tasks import SyntheticSplits, make_splits
from mtrl.envs.code.task import CodeTask

_SPLIT_NAMES = {"train": "train", "validation": "heldout", "test": "test"}


class FamilySuite:
    task_type = CodeTask  # the environments that play it: code, tool

    def __init__(self, data: DataConfig, seed: int):
        if data.path:
            raise ValueError("config.data.path: the integer-function family is generated; "
                             "leave it ''")
        options = {k: tuple(v) if isinstance(v, list) else v for k, v in data.options.items()}
        self.seed = int(options.pop("seed", seed))
        try:
            self.family = FamilyConfig(**options)
        except TypeError as e:
            raise ValueError(f"config.data.options: {e}") from None
        for split, spec in (("train", data.train_split), ("validation", data.eval_split),
                            ("test", data.test_split)):
            if spec not in ("", _SPLIT_NAMES[split]):
                raise ValueError(f"config.data: the family's {split} split is "
                                 f"{_SPLIT_NAMES[split]!r}, got {spec!r}")
        if not data.train_split or not data.eval_split:
            raise ValueError("config.data: the family needs train_split and eval_split")
        self.data = data

    @functools.cached_property
    def splits(self) -> SyntheticSplits:
        d = self.data
        num_test = d.num_test if d.test_split else 0
        return make_splits(self.family, num_train=d.num_train, num_heldout=d.num_eval,
                           num_test=num_test, seed=self.seed,
                           num_ood_test=num_test if self._has_ood else 0)

    @property
    def _has_ood(self) -> bool:
        return self.family.iid_test and bool(self.family.test_members())

    def tasks(self, split: str) -> list:
        return list(self.splits.code_tasks(_SPLIT_NAMES[check_split(split)]))

    def extra_test_splits(self) -> dict[str, list]:
        """{"ood_test": tasks} when the test split is iid (option iid_test) and the
        family has test_terms: the unseen-number tasks, reported beside "test";
        {} otherwise (and without a test split)."""
        if not self.data.test_split or not self._has_ood:
            return {}
        return {"ood_test": list(self.splits.code_tasks("ood_test"))}

    def templates(self, name: str):
        return default_templates(name, {"tiny": TINY_PROMPT_TEMPLATES})

    def check_sft(self, sft, num_agents: int) -> None:
        if sft.first_guess:
            try:
                check_first_guess(sft.first_guess, num_agents)
            except ValueError as e:
                raise ValueError(f"config.sft.{e}") from None

    def demonstrations(self, env, num_agents: int, sft) -> list[list[tuple]]:
        """[agent] -> (prompt, completion): first-turn answers for sft.fraction of the
        train tasks, then per agent sft.revision_fraction revisions whose prompts carry
        the environment's feedback on the wrong first attempt (sft_data.revision_pairs),
        sft.resubmit_fraction of them answered with the attempt unchanged."""
        return self._demonstrations(env, num_agents, sft, self.splits.train)

    def validation_demonstrations(self, env, num_agents: int, sft) -> list[list[tuple]]:
        """The same rows built from the validation tasks (values no train row holds),
        for the warm start's check (training/sft/warm_start_check.py); nothing trains
        on them, so they pass the builders' guard against held-out tasks relabelled."""
        heldout = tuple(dataclasses.replace(t, split="train") for t in self.splits.heldout)
        return self._demonstrations(env, num_agents, sft, heldout)

    def _demonstrations(self, env, num_agents: int, sft, train) -> list[list[tuple]]:
        self.check_sft(sft, num_agents)
        first_guess = sft.first_guess or None
        demos = sft_demonstrations(train, fraction=sft.fraction, num_agents=num_agents,
                                   seed=self.seed, first_guess=first_guess)
        pairs = [[] for _ in range(num_agents)]
        for demo in demos:
            _, prompts = env.reset(demo.task)
            for a in range(num_agents):
                pairs[a].append((prompts[a], demo.completions[a]))
        fractions = per_agent(sft.revision_fraction, num_agents, "revision_fraction")
        resubmits = per_agent(sft.resubmit_fraction, num_agents, "resubmit_fraction")
        # Agents with the same fraction share one seeded set of revisions: scored once.
        for fraction in sorted(set(fractions)):
            revisions = revision_demonstrations(train, self.family, fraction=fraction,
                                                num_agents=num_agents, seed=self.seed,
                                                first_guess=first_guess)
            scored = revision_pairs(env, revisions, resubmit_fractions=resubmits,
                                    seed=self.seed)
            for a in range(num_agents):
                if fractions[a] == fraction:
                    pairs[a].extend(scored[a])
        return pairs


SUITES.register("intfn")(FamilySuite)
