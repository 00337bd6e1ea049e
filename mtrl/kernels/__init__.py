"""Compiled CPU kernels reached through `jax.ffi` (floor 1: imports nothing of mtrl's).

  onednn_matmul  bfloat16 matmuls with float32 accumulation on oneDNN (the CPU's AMX
                 units where it has them); built by `python -m mtrl.kernels.build`.
  cpu            what the CPU offers (its /proc/cpuinfo flags).
"""
