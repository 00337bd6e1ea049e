"""Scale-out: the device mesh, sharding rules and multi-host helpers.

    mesh.py        MeshConfig ("auto" | "d,f,t" over data, fsdp, tensor), make_mesh
    rules.py       logical-axis rules of the model's parameters (PARAM_AXES,
                   LOGICAL_AXIS_RULES), partition specs, check_model_fits
    shardings.py   ShardingPlan: shardings of params, optimizer states, reference
                   model, train state and batches; placing host data on the mesh
    distributed.py jax.distributed from flags (coordinator, processes, process id;
                   automatic on TPU pods), process-local shares of work
    process_rollout.py the trainer's host side in several processes: task shares,
                   rows gathered for the global update, process-local policy copies

The train step (make_train_step(..., shardings=plan)) and the sampler
(Sampler(model, shardings=plan)) take a plan; nothing here imports the trainer.
"""

from mtrl.parallel.mesh import AXES, BATCH_AXES, MeshConfig, make_mesh, parse_shape
from mtrl.parallel.rules import (LOGICAL_AXIS_RULES, PARAM_AXES, check_model_fits,
                                 logical_axes, partition_spec, tree_partition_specs)
from mtrl.parallel.shardings import ShardingPlan, bytes_per_device, committed

__all__ = ["AXES", "BATCH_AXES", "LOGICAL_AXIS_RULES", "MeshConfig", "PARAM_AXES",
           "ShardingPlan", "bytes_per_device", "check_model_fits", "committed", "logical_axes",
           "make_mesh", "parse_shape", "partition_spec", "tree_partition_specs"]
