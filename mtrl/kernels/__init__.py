"""Compiled CPU kernels reached through `jax.ffi` (floor 1: imports nothing outside kernels/).

  library           the compiled library (one .so for every kernel): loaded and
                    registered once, or the reason it cannot be; built by
                    `python -m mtrl.kernels.build`.
  onednn_matmul     bfloat16 matmuls with float32 accumulation on oneDNN (the CPU's
                    AMX units where it has them).
  decode_attention  fused one-query-per-row attention over the K/V cache (OpenMP).
  cpu               what the CPU offers (its /proc/cpuinfo flags).
"""
