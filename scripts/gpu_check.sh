#!/usr/bin/env bash
# The GPU checks, as one script (a CUDA host; CI has no GPU): the `gpu` test tier, then the
# Qwen2.5-VL-3B-sized benchmark (benchmarks/gpu_scale.py). Logs and JSON go to $OUT.
#   OUT=/tmp/gpu-out bash scripts/gpu_check.sh
# Stage limits (seconds): T_TESTS, T_BENCH. PY picks the interpreter (default python3).
set -u
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
PY=${PY:-python3}
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
$PY - > "$OUT/versions.txt" 2>&1 <<'PY'
import importlib, sys
print(sys.version)
for m in ("torch", "transformers", "tokenizers", "pydantic", "gymnasium", "vllm"):
    try:
        print(m, importlib.import_module(m).__version__)
    except Exception as e:  # noqa: BLE001
        print(m, "missing:", type(e).__name__, e)
PY
cat "$OUT/versions.txt"
echo "== gpu tests"
timeout "${T_TESTS:-200}" $PY -m pytest -m gpu -q -p no:cacheprovider -o addopts="-ra --strict-markers" \
    tests/train/test_gpu.py tests/policy/test_vllm.py > "$OUT/pytest-gpu.log" 2>&1
echo "pytest rc=$?"; tail -15 "$OUT/pytest-gpu.log"
echo "== gpu_scale"
timeout "${T_BENCH:-330}" $PY benchmarks/gpu_scale.py --out "$OUT/gpu_scale.json" > "$OUT/gpu_scale.log" 2>&1
echo "gpu_scale rc=$?"; grep -E '^\{"(generate|train_step|push|phase)' "$OUT/gpu_scale.log"; grep -E "Error|error" "$OUT/gpu_scale.log" | tail -5
