"""train.write_traces: every RL step's rollout episodes in OpenEnv's training-trace
format under workdir/traces/, read back token for token; off by default; a run
starting (or resuming) at step s removes later steps' and half-written files."""

import pytest

from mtrl.config.fields import ConfigErrors
from mtrl.envs.openenv.traces import read_traces
from mtrl.training.config import base_config, parse
from mtrl.training.logging import traces as traces_module
from mtrl.training.logging.traces import TRACES_DIR, clear_traces_after, trace_file
from mtrl.training.loop.trainer import Trainer
from mtrl.training.run.sections import TrainConfig
from tests.training.loop.small_run import small_config


def _run(workdir, steps, write_traces=None):
    """A small run of the code environment (2 agents, 2 tasks per step, G=2, no SFT):
    the trees its steps grew, and the tasks chosen for each."""
    c = small_config()
    c.train.steps = c.train.eval_interval = c.train.save_interval = steps
    c.train.eval_feedback_gain = False
    if write_traces is not None:
        c.train.write_traces = write_traces
    trainer = Trainer(c, workdir, show_progress=False)
    grown, chosen = {}, {}
    grow = trainer._grow_step

    def capture(step, state):
        tree, staleness = grow(step, state)
        grown[step], chosen[step] = tree, trainer.step_tasks.chosen(step)
        return tree, staleness

    trainer._grow_step = capture
    try:
        trainer.run()
    finally:
        trainer.close()
    return grown, chosen


def _tree_pairs(tree):
    """Every (agent, prompt ids, completion ids) the tree sampled."""
    G = tree.config.num_generations
    return {(a, tuple(int(i) for i in r.contexts[a][row // G]),
             tuple(int(i) for i in r.completions[a][row]))
            for r in tree.turns for a in range(len(r.completions))
            for row in range(len(r.completions[a]))}


def test_a_run_writes_each_steps_episodes_as_training_traces(tmp_path):
    folder = tmp_path / TRACES_DIR
    folder.mkdir()
    # An earlier attempt's files: a later step and a half-written one go.
    (folder / "step_00000007.jsonl").write_text("stale\n")
    (folder / "step_00000001.jsonl.tmp").write_text("half")
    grown, chosen = _run(tmp_path, 2, write_traces=True)
    assert sorted(p.name for p in folder.iterdir()) == ["step_00000001.jsonl",
                                                       "step_00000002.jsonl"]
    for step, tree in grown.items():
        back = read_traces(folder / f"step_{step:08d}.jsonl")
        agents = tree.joint_index.shape[1]
        assert agents == 2
        # One trace per root-to-leaf path per agent: each task's last turn's leaves.
        leaves = sum(int((~r.expanded).sum()) for r in tree.turns)
        assert len(back) == leaves * agents
        turns = [t for trace in back for t in trace.turns]
        got = {(t.metadata["agent"], tuple(t.prompt_token_ids), tuple(t.completion_token_ids))
               for t in turns}
        assert got == _tree_pairs(tree)
        first, turn = tree.turns[0], back[0].turns[0]
        assert turn.prompt_token_ids == [int(i) for i in first.contexts[0][0]]
        assert turn.completion_token_ids == [int(i) for i in first.completions[0][0]]
        assert turn.per_token_logps == [float(x) for x in first.logprobs[0][0]]
        assert turn.metadata["task_id"] == str(chosen[step][0].task_id)
        assert {t.metadata["task_id"] for t in turns} == {str(t.task_id) for t in chosen[step]}
        assert all(len(t.loss_mask) == len(t.prompt_token_ids) + len(t.completion_token_ids)
                   for t in turns)


def test_traces_are_off_by_default(tmp_path):
    assert base_config().train.write_traces is False
    assert parse(base_config()).train.write_traces is False
    _run(tmp_path, 1)
    assert not (tmp_path / TRACES_DIR).exists()


def test_write_traces_without_openenv_fails_in_one_line(monkeypatch):
    monkeypatch.setattr(traces_module, "openenv_installed", lambda: False)
    c = base_config()
    c.train.write_traces = True
    with pytest.raises(ConfigErrors) as error:
        parse(c)
    line, = [x for x in error.value.lines if "write_traces" in x]
    assert line == ("config.train.write_traces=True needs OpenEnv's training-trace format: "
                    "pip install \"mtrl[openenv]\" (or set train.write_traces=False)")
    c.train.write_traces = False
    parse(c)  # off: nothing to check


def test_write_traces_must_be_a_bool():
    with pytest.raises(ValueError, match="write_traces"):
        TrainConfig(write_traces="yes")


def test_trace_files_and_what_a_resume_clears(tmp_path):
    assert trace_file(tmp_path, 3) == tmp_path / TRACES_DIR / "step_00000003.jsonl"
    assert trace_file(tmp_path, 3, 1, 2).name == "step_00000003.process1.jsonl"
    with pytest.raises(ValueError, match="positive"):
        trace_file(tmp_path, 0)
    assert clear_traces_after(tmp_path, 0, 0, 1) == []  # no folder yet
    folder = tmp_path / TRACES_DIR
    folder.mkdir()
    names = ["step_00000001.jsonl", "step_00000002.jsonl", "step_00000003.jsonl",
             "step_00000002.jsonl.tmp", "step_00000003.process0.jsonl", "notes.txt"]
    for name in names:
        (folder / name).write_text("x")
    removed = clear_traces_after(tmp_path, 1, 0, 1)
    assert sorted(p.name for p in removed) == ["step_00000002.jsonl",
                                               "step_00000002.jsonl.tmp",
                                               "step_00000003.jsonl"]
    # Process 0 of two owns only its .process0 files.
    assert [p.name for p in clear_traces_after(tmp_path, 1, 0, 2)] == [
        "step_00000003.process0.jsonl"]
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt", "step_00000001.jsonl"]
