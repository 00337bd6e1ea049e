"""The calc suite (mtrl/data/calc_suite.py): seeded disjoint splits of products, and
two-turn SFT demonstrations built from the tool environment's own output."""

import pytest

from mtrl.data.calc_suite import CalcSuite
from mtrl.data.demonstrations import Revision
from mtrl.data.suite import DataConfig, build_suite
from mtrl.envs.sandbox import Limits, SandboxPool
from mtrl.envs.tool import ToolEnv, ToolEnvConfig


def config(**options):
    return DataConfig(name="calc", train_split="train", eval_split="validation",
                      test_split="test", num_train=40, num_eval=20, num_test=30,
                      options=options)


def test_splits_are_seeded_disjoint_and_sized():
    suite = build_suite(config(), seed=5)
    assert isinstance(suite, CalcSuite)
    train, val, test = (suite.tasks(s) for s in ("train", "validation", "test"))
    assert (len(train), len(val), len(test)) == (40, 20, 30)
    questions = [{t.question for t in split} for split in (train, val, test)]
    assert sum(map(len, questions)) == 90  # no repeats within or across splits
    task = test[0]
    a, b = task.question.removeprefix("What is ").removesuffix("?").split(" * ")
    assert (len(a), len(b)) == (4, 3) and task.answer == str(int(a) * int(b))
    # The run's seed does not change the tasks; the suite's option does.
    assert build_suite(config(), seed=9).tasks("test") == test
    assert build_suite(config(seed=1), seed=5).tasks("test") != test


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="unknown \\['shuffle'\\]"):
        build_suite(config(shuffle=True), seed=0)
    with pytest.raises(ValueError, match="direct_fraction must lie in"):
        build_suite(config(direct_fraction=1.5), seed=0)
    with pytest.raises(ValueError, match="too few distinct products"):
        build_suite(config(digits=(1, 1)), seed=0).tasks("test")


def test_demonstrations_call_then_copy_the_tools_output():
    class Sft:
        first_guess = ""
    suite = build_suite(config(direct_fraction=0.5), seed=0)
    limits = Limits(wall_s_per_test=2.0, wall_s_total=4.0)
    with SandboxPool(num_workers=1, limits=limits) as pool:
        env = ToolEnv(ToolEnvConfig(max_turns=2), sandbox=pool)
        (pairs,) = suite.demonstrations(env, 1, Sft())
    revisions = [(p, c) for p, c in pairs if isinstance(p, Revision)]
    direct = [c for p, c in pairs if not isinstance(p, Revision) and c.startswith("\\boxed")]
    assert len(revisions) + len(direct) == 40 and 5 < len(direct) < 35
    prompt, completion = revisions[0]
    (call, observation), = prompt.exchanges
    assert call.startswith("```python\nprint(") and observation.startswith("Output:\n")
    assert completion == f"\\boxed{{{observation.removeprefix('Output:').strip()}}}"
