#!/usr/bin/env bash
# The accelerator record on a lent GPU machine, one prepared command:
#
#   bash bench/gpu_record.sh [OUT_DIR]      # default: $OUT, else bench/records/gpu
#
# Installs nothing it can avoid: the device image has JAX (CUDA), flax, optax, orbax,
# chex, transformers and torch; the few pure-Python packages it lacks travel as wheels
# in .whl/ (BENCHMARKS.md, "GPU", says which and how). Writes into OUT_DIR:
#   versions.txt     the packages and the GPU the numbers came from
#   <device>.json    bench/gpu.py's record, rewritten after every part, so a
#                    run stopped by the time limit keeps what finished
#   log.txt          everything printed
# MTRL_GPU_LIMIT_S (default 420) bounds the benchmark; a second try fits beside it in
# a 15-minute lease. Extra arguments after OUT_DIR go to bench/gpu.py (e.g. --skip).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-bench/records/gpu}}"
shift || true
mkdir -p "$out"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/mtrl-site .whl/*.whl || exit 1
  export PYTHONPATH="/tmp/mtrl-site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
# JAX and torch share the GPU (transformers' generate is the sampler's baseline).
export XLA_PYTHON_CLIENT_MEM_FRACTION="${XLA_PYTHON_CLIENT_MEM_FRACTION:-0.6}"
{
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  python3 -c 'import sys, jax, flax, optax, transformers, torch
print(sys.version.split()[0], "jax", jax.__version__, "flax", flax.__version__,
      "optax", optax.__version__, "transformers", transformers.__version__,
      "torch", torch.__version__, "cuda", torch.cuda.is_available(), jax.devices())'
  git rev-parse HEAD 2>/dev/null || true
} 2>&1 | tee "$out/versions.txt"
timeout -k 10 "${MTRL_GPU_LIMIT_S:-420}" python3 -m bench.gpu --out "$out" "$@" 2>&1 \
  | tee "$out/log.txt"
