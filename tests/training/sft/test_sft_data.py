"""SFT demonstrations for the built-in family: first-turn pairs plus revisions whose
prompts carry the environment's own feedback on a wrong first attempt."""

import pytest

from mtrl.data.suite import build_suite
from mtrl.training.config import base_config
from mtrl.training.config.readers import read_section
from mtrl.data.demonstrations import Revision, per_agent
from mtrl.training.sft.sft_data import first_phase_kinds, rows_of_kind
from mtrl.envs.code import CodeEnv, CodeEnvConfig
from mtrl.envs.sandbox import SandboxPool


def family_pairs(num_train: int, history_mode: str = "full", **sft):
    """The built-in family suite's demonstrations for two agents (tiny templates,
    compact feedback), with `sft` overriding config.sft; also the train tasks."""
    c = base_config()
    c.data.num_train = num_train
    c.sft = dict(c.sft.to_dict(), **sft)
    suite = build_suite(read_section(c, "data"), c.seed)
    with SandboxPool(num_workers=1) as pool:
        env = CodeEnv(CodeEnvConfig(num_agents=2, feedback_style="compact",
                                    history_mode=history_mode,
                                    templates=suite.templates("tiny")), sandbox=pool)
        return suite.demonstrations(env, 2, c.sft), suite.tasks("train")


def test_revision_pairs_carry_the_failing_probe_and_the_true_answer():
    pairs, train = family_pairs(40, revision_fraction=0.5)
    revisions = [[p for p in agent if isinstance(p[0], Revision)] for agent in pairs]
    assert len(revisions[0]) == len(revisions[1]) == 20
    first_turn = [[p for p in agent if isinstance(p[0], str)] for agent in pairs]
    assert len(first_turn[0]) == 40
    for (helper_prompt, helper_answer), (main_prompt, main_answer) in zip(*revisions):
        ((attempt, observation),) = helper_prompt.exchanges
        # The feedback is the environment's: the first hidden test failed and is shown
        # (tasks can share a prompt, so the shown probe identifies the task).
        matches = [t for t in train if t.prompt in helper_prompt.prompt and
                   f"FAILED {t.tests[0].removeprefix('assert ').strip()}\n" in observation]
        assert matches  # (the example and the probe identify the function)
        task = matches[0]
        # The revision instruction restates the task (the example's value ends it),
        # for the helper too, right after its failing probe (whose value it copies).
        assert observation.endswith(f"{task.tests[0].removeprefix('assert ').strip()}"
                                    f"\nRevise aux. {task.prompt}")
        assert main_prompt.exchanges[0][1].endswith(f"Revise f. {task.prompt}")
        assert (attempt, main_prompt.exchanges[0][0]) != (helper_answer, main_answer)
        # The revision solves the task.
        program = (helper_answer + "\n" + main_answer).replace("```python", "")
        namespace = {}
        exec(program.replace("```", ""), namespace)
        for test in task.tests:
            exec(test, namespace)


def test_revision_fraction_per_agent():
    pairs, _ = family_pairs(40, revision_fraction=(0.5, 0.0))
    counts = [sum(isinstance(p[0], Revision) for p in agent) for agent in pairs]
    assert counts == [20, 0]
    assert per_agent(0.25, 2, "revision_fraction") == (0.25, 0.25)
    assert per_agent((0.25,), 2, "revision_fraction") == (0.25, 0.25)  # one for every agent
    with pytest.raises(ValueError, match="env.num_agents=2 needs sft.revision_fraction with "
                                         "2 entries"):
        per_agent((0.1, 0.2, 0.3), 2, "revision_fraction")


def test_agents_with_one_revision_fraction_share_one_scoring_pass():
    class CountingEnv(CodeEnv):
        steps = 0

        def step(self, *args, **kwargs):
            CountingEnv.steps += 1
            return super().step(*args, **kwargs)

    for fractions, passes in (((0.5, 0.5), 1), ((0.5, 0.25), 2)):
        c = base_config()
        c.data.num_train = 40
        c.sft = dict(c.sft.to_dict(), revision_fraction=fractions)
        suite = build_suite(read_section(c, "data"), c.seed)
        CountingEnv.steps = 0
        with SandboxPool(num_workers=1) as pool:
            env = CountingEnv(CodeEnvConfig(num_agents=2, feedback_style="compact",
                                            templates=suite.templates("tiny")), sandbox=pool)
            pairs = suite.demonstrations(env, 2, c.sft)
        assert CountingEnv.steps == passes
        counts = [sum(isinstance(p, Revision) for p, _ in agent) for agent in pairs]
        assert counts == [round(f * 40) for f in fractions]


def helper_revisions(resubmit_fraction):
    pairs, _ = family_pairs(40, revision_fraction=1.0,
                            resubmit_fraction=(resubmit_fraction, 0.0))
    return [(p.exchanges[0][0], answer) for p, answer in pairs[0] if isinstance(p, Revision)]


def test_resubmit_fraction_makes_a_weak_teacher():
    honest = helper_revisions(0.0)
    weak = helper_revisions(0.5)
    assert len(honest) == len(weak) == 40
    # An honest revision always changes the wrong first attempt...
    assert not any(attempt == answer for attempt, answer in honest)
    # ...a weak teacher resubmits it unchanged in about half of them (seeded), and
    # otherwise gives the same correct revision as the honest one.
    resubmitted = [attempt == answer for attempt, answer in weak]
    assert 10 <= sum(resubmitted) <= 30
    for (attempt, answer), (_, honest_answer), lazy in zip(weak, honest, resubmitted):
        assert answer == (attempt if lazy else honest_answer)


def test_per_agent_fractions_and_first_phase_kinds_are_checked():
    assert per_agent(0.25, 2, "resubmit_fraction") == (0.25, 0.25)
    assert per_agent((0.5, 0.0), 2, "resubmit_fraction") == (0.5, 0.0)
    with pytest.raises(ValueError, match=r"config.sft.resubmit_fraction: every entry"):
        per_agent((1.5, 0.0), 2, "resubmit_fraction")
    assert first_phase_kinds("first_turn", 2) == ("first_turn", "first_turn")
    assert first_phase_kinds(("revisions", "first_turn"), 2) == ("revisions", "first_turn")
    # What the message lists as valid is accepted: one kind (a one-entry tuple too).
    assert first_phase_kinds(("revisions",), 2) == ("revisions", "revisions")
    for bad in ("revision", ("first_turn", "all")):
        with pytest.raises(ValueError, match="config.sft.first_phase: each kind must be "
                                             "first_turn or revisions"):
            first_phase_kinds(bad, 2)
    with pytest.raises(ValueError, match="env.num_agents=2 needs one kind"):
        first_phase_kinds(("revisions",) * 3, 2)
    revision = Revision("p", (("a", "o"),))
    pairs = [("p", "x"), (revision, "y"), (revision, "a")]
    assert rows_of_kind(pairs, "first_turn") == [("p", "x")]
    # A resubmission ("a" again) is not a revision.
    assert rows_of_kind(pairs, "revisions") == [(revision, "y")]
    assert rows_of_kind(pairs, None) == pairs


def test_revisions_under_a_context_reset_are_the_observation_alone():
    from mtrl.rollout.formatting import PlainFormat
    from mtrl.tokenizers import ByteTokenizer
    from mtrl.training.sft.sft import prompt_token_ids
    pairs, _ = family_pairs(20, history_mode="feedback", revision_fraction=0.5)
    revisions = [p for p, _ in pairs[1] if isinstance(p, Revision)]
    assert len(revisions) == 10 and all(r.reset for r in revisions)
    tokenizer, fmt = ByteTokenizer(), PlainFormat()
    for r in revisions:
        ((_, observation),) = r.exchanges
        assert observation.startswith("aux ok") and observation.endswith(r.prompt.split(". ")[-1])
        # Tokens: the observation as a first prompt, as the rollout restarts a reset context.
        assert prompt_token_ids(tokenizer, r, fmt) == tokenizer.encode(fmt.first(observation))


def test_demonstrations_follow_the_data_seed():
    """Regression: the family's SFT split was rebuilt from config.seed, ignoring
    data.options.seed, so SFT taught functions outside the run's train split."""
    c = base_config()
    c.seed, c.data.num_train, c.sft.revision_fraction = 0, 30, 0.0
    c.data.options = {"seed": 7}
    suite = build_suite(read_section(c, "data"), c.seed)
    train = suite.tasks("train")
    with SandboxPool(num_workers=1) as pool:
        env = CodeEnv(CodeEnvConfig(num_agents=2, feedback_style="compact",
                                    templates=suite.templates("tiny")), sandbox=pool)
        pairs = suite.demonstrations(env, 2, c.sft)
        train_prompts = {env.reset(t)[1][0] for t in train}
    assert pairs[0] and all(prompt in train_prompts for prompt, _ in pairs[0])
