#!/usr/bin/env bash
# The embedded default at a larger model (qwen2-3m: 4 layers, width
# 256, ~3M parameters, against the default's 2-layer tiny) on a lent GPU, to see
# whether model size is what limits generalization. Writes the run's workdir (metrics
# as they come), its summary JSON and the log under OUT_DIR; MTRL_GPU_LIMIT_S bounds it.
#
#   bash tools/gpu_learning_run.sh [OUT_DIR] [extra --config.* flags]
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
name=default_qwen2-3m
timeout -k 5 "${MTRL_GPU_LIMIT_S:-170}" python3 -m mtrl.train \
  --config=experiments/configs/default.py --workdir="$out/$name" --out="$out/$name.json" \
  --config.model.preset=qwen2-3m --config.model.overrides.num_layers=4 "$@" 2>&1 \
  | tee "$out/$name.log"
