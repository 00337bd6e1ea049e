"""Mesh config, sharding rules and the distributed config, on the test process's
single CPU device: shapes parse or fail in one line naming the problem, every
parameter of the model gets the rule's spec, and a shape that does not fit the
devices or the model fails when the plan is built."""

import dataclasses

import jax
import ml_collections
import pytest
from flax import nnx
from jax.sharding import PartitionSpec as P

from mtrl.models import PRESETS, Transformer
from mtrl.parallel import MeshConfig, ShardingPlan, check_model_fits, parse_shape, \
    tree_partition_specs
from mtrl.parallel.distributed import DistributedConfig, process_share
from mtrl.parallel.from_config import plan_for
from mtrl.training.config.readers import read_section
from mtrl.training.policy.optim import OptimConfig, make_optimizer
from mtrl.training.policy.train_state import init_train_state

TINY = dataclasses.replace(PRESETS.get("tiny"), num_layers=1)


def test_parse_shape():
    assert parse_shape("auto") is None and parse_shape(" AUTO ") is None
    assert parse_shape("2,4,1") == (2, 4, 1) == parse_shape((2, 4, 1))
    assert parse_shape("2x2x2") == (2, 2, 2)
    for bad in ("2,4", "a,b,c", "0,1,1", (2, 2, 2, 1)):
        with pytest.raises(ValueError, match="shape must be"):
            parse_shape(bad)


def test_axis_sizes():
    assert MeshConfig().axis_sizes(8) == (8, 1, 1)
    assert MeshConfig("2,2,2").axis_sizes(8) == (2, 2, 2)
    with pytest.raises(ValueError, match=r"needs 4 devices \(2x2x1\), but 8 are visible"):
        MeshConfig("2,2,1").axis_sizes(8)


def test_model_must_split_over_the_mesh():
    check_model_fits(TINY, {"tensor": 2, "fsdp": 8})  # 4 heads, 2 kv heads, D = 128
    with pytest.raises(ValueError, match=r"^tensor=4 does not divide the model's "
                                         r"num_kv_heads \(2\)$"):
        check_model_fits(TINY, {"tensor": 4})
    with pytest.raises(ValueError, match=r"fsdp=3 does not divide the model's hidden_size"):
        check_model_fits(TINY, {"fsdp": 3})


def test_rules_give_every_parameter_and_moment_its_spec():
    params = nnx.split(Transformer(TINY, rngs=nnx.Rngs(0)))[1]
    state = init_train_state([params, params], make_optimizer(OptimConfig()), shared=False,
                             keep_reference=True)
    specs = tree_partition_specs(state, {"data": 2, "fsdp": 2, "tensor": 2})
    p = specs.params
    # [agent, vocab, D]: agents replicated, vocab whole (259 is odd), D over fsdp
    assert p["embed_tokens"]["embedding"].value == P(None, None, "fsdp")
    # [agent, layer, D, H*hd] / [agent, layer, H*hd, D]
    assert p["layers"]["self_attn"]["q_proj"]["kernel"].value == P(None, None, "fsdp", "tensor")
    assert p["layers"]["self_attn"]["k_proj"]["bias"].value == P(None, None, "tensor")
    assert p["layers"]["self_attn"]["o_proj"]["kernel"].value == P(None, None, "tensor", "fsdp")
    assert p["layers"]["mlp"]["up_proj"]["kernel"].value == P(None, None, "fsdp", "tensor")
    assert p["layers"]["mlp"]["down_proj"]["kernel"].value == P(None, None, "tensor", "fsdp")
    assert p["layers"]["input_layernorm"]["weight"].value == P(None, None, None)
    assert specs.step == P()
    # Adam's moments follow their parameters; the reference copy too.
    adam = specs.opt_state[1][0]
    assert adam.mu == p and adam.nu == p and specs.ref_params == p
    assert adam.count == P()
    # axes of size 1 are left out: pure data parallelism replicates everything
    flat = jax.tree.leaves(tree_partition_specs(state, {"data": 8, "fsdp": 1, "tensor": 1}),
                           is_leaf=lambda x: isinstance(x, P))
    assert all(all(axis is None for axis in spec) for spec in flat)


def test_plan_from_config_on_one_device():
    config = ml_collections.ConfigDict({"mesh": {"shape": "auto"}})
    assert plan_for(read_section(config, "mesh"), TINY) is None  # one device: single-device programs
    config.mesh.shape = "1,1,1"
    plan = plan_for(read_section(config, "mesh"), TINY)
    assert isinstance(plan, ShardingPlan) and dict(plan.mesh.shape) == {
        "data": 1, "fsdp": 1, "tensor": 1}
    config.mesh.shape = "2,1,1"
    with pytest.raises(ValueError, match=r"^config\.mesh\.shape: shape '2,1,1' needs 2 "
                                         r"devices \(2x1x1\), but 1 are visible$"):
        plan_for(read_section(config, "mesh"), TINY)
    config.mesh.shape = "2,1"
    with pytest.raises(ValueError, match=r"^config\.mesh\.shape: must be"):
        read_section(config, "mesh")
    with pytest.raises(ValueError, match=r"^config\.mesh\.axes: no such field; valid: shape"):
        read_section(ml_collections.ConfigDict({"mesh": {"shape": "auto", "axes": "x"}}), "mesh")


def test_distributed_config():
    assert not DistributedConfig().enabled
    assert DistributedConfig(auto=True).enabled
    assert DistributedConfig("127.0.0.1:1234", 2, 1).enabled
    with pytest.raises(ValueError, match="needs coordinator_address"):
        DistributedConfig("", 2, 0)
    with pytest.raises(ValueError, match=r"process_id must lie in \[0, 2\)"):
        DistributedConfig("h:1", 2, 2)
    with pytest.raises(ValueError, match="do not also set"):
        DistributedConfig("h:1", 2, 0, auto=True)


def test_process_share():
    tasks = list(range(6))
    assert process_share(tasks, 0, 2) == [0, 1, 2]
    assert process_share(tasks, 1, 2) == [3, 4, 5]
    assert process_share(tasks) == tasks  # one process
    with pytest.raises(ValueError, match="do not split evenly over 4"):
        process_share(tasks, 0, 4)
