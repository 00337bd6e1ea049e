"""The compiled shapes as loop state: recorded in a checkpoint's extra, put back into a
fresh sampler and update stage (frozen past the run's freeze, still warming up before
it), and absent from an older checkpoint, which then freezes as it always did."""

import json
from types import SimpleNamespace

from mtrl.sampling.buckets import ShapeCover
from mtrl.training.loop.compiled_shapes import compiled_shapes, freeze_step, restore_compiled
from mtrl.training.loop.loop_state import LoopState
from mtrl.training.loop.step_metrics import COMPILE_WARMUP_STEPS
from tests.training.loop.test_loop_state import OLD_EXTRA


class FakeStep:
    """A train step's layout record (TrainStep.layouts and the methods beside it)."""

    def __init__(self, layouts=()):
        self._layouts, self.frozen = [list(x) for x in layouts], False

    def layouts(self):
        return sorted(self._layouts)

    def restore_layouts(self, layouts):
        self._layouts = [list(x) for x in layouts]

    def freeze_layouts(self):
        self.frozen = True


class FakeSampler:
    def __init__(self):
        self.shapes = ShapeCover()

    def freeze(self):
        self.shapes.frozen = True


def parts(layouts=(), row_shapes=()):
    return FakeSampler(), SimpleNamespace(step_fn=FakeStep(layouts), row_shapes=set(row_shapes))


def test_a_record_round_trips_through_a_checkpoint_extra():
    sampler, update = parts([[1, 96, 160, 4, 64], [1, 96, 160, 265, 96]], [(1, 160, 96)])
    sampler.shapes.shape("prefill", (8, 32))
    sampler.shapes.shape(("decode", "sampled"), (32, 64, 32, 4, 128))
    record = compiled_shapes(sampler, update, COMPILE_WARMUP_STEPS)
    loop = LoopState(step=5, run_seconds=1.0, sft_minutes=0.0, post_sft={}).with_compiled(record)
    extra = json.loads(json.dumps(loop.extra()))  # as orbax's JSON item holds it
    assert LoopState.from_extra(extra) == loop

    for step, frozen in ((COMPILE_WARMUP_STEPS - 1, False), (COMPILE_WARMUP_STEPS, True)):
        sampler2, update2 = parts()
        restore_compiled(LoopState.from_extra(extra).compiled, sampler2, update2, step)
        assert sampler2.shapes.state() == sampler.shapes.state()
        assert update2.step_fn.layouts() == update.step_fn.layouts()
        assert update2.row_shapes == {(1, 160, 96)}
        # Past the run's freeze: frozen; before it: still warming up.
        assert sampler2.shapes.frozen == update2.step_fn.frozen == frozen
        assert freeze_step(record, step) == COMPILE_WARMUP_STEPS


def test_an_old_checkpoint_freezes_after_its_invocations_warm_up():
    loop = LoopState.from_extra(OLD_EXTRA)
    assert loop.compiled is None and "compiled_shapes" not in loop.extra()
    sampler, update = parts()
    restore_compiled(loop.compiled, sampler, update, loop.step)
    assert not sampler.shapes.frozen and not update.step_fn.frozen
    assert freeze_step(loop.compiled, loop.step) == loop.step + COMPILE_WARMUP_STEPS
    # A fresh run (no record, step 0) freezes after the run's first steps.
    assert freeze_step(None, 0) == COMPILE_WARMUP_STEPS
