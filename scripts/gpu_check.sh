#!/usr/bin/env bash
# GPU check for the open-weight routes: load a small model through the in-process `vllm`
# backend, then through `vllm serve` + the `openai_compatible` backend, and print samples/s
# for each. Needs an NVIDIA GPU and a Python environment with vLLM and mcu_exp installed
# (docs/remote-backends.md, "A separate vLLM environment"). Fails fast otherwise.
#
#   VLLM_PYTHON=/opt/vllm-env/bin/python scripts/gpu_check.sh
#
# Settings (environment): MODEL (hub id in the local cache, or a folder; default
# Qwen/Qwen2.5-0.5B-Instruct), VLLM_PYTHON (default: python), PROMPTS (default 32),
# SAMPLES_PER_PROMPT (default 8), PORT (default 8011), SERVE_WAIT_S (default 300),
# MAX_MODEL_LEN (default 2048).
set -euo pipefail

MODEL="${MODEL:-Qwen/Qwen2.5-0.5B-Instruct}"
PY="${VLLM_PYTHON:-python}"
PROMPTS="${PROMPTS:-32}"
SAMPLES_PER_PROMPT="${SAMPLES_PER_PROMPT:-8}"
PORT="${PORT:-8011}"
SERVE_WAIT_S="${SERVE_WAIT_S:-300}"
MAX_MODEL_LEN="${MAX_MODEL_LEN:-2048}"
export MODEL PROMPTS SAMPLES_PER_PROMPT MAX_MODEL_LEN

fail() { echo "gpu_check: $*" >&2; exit 1; }

command -v nvidia-smi >/dev/null 2>&1 || fail "no GPU: nvidia-smi not found (run this on a machine with an NVIDIA GPU)"
nvidia-smi -L 2>/dev/null | grep -q "^GPU" || fail "no GPU: nvidia-smi lists none"
command -v "$PY" >/dev/null 2>&1 || fail "python '$PY' not found (set VLLM_PYTHON to the vLLM environment's python)"
"$PY" -c "import vllm" 2>/dev/null || fail "vLLM is not importable by '$PY' (set VLLM_PYTHON; see docs/remote-backends.md)"
"$PY" -c "import mcu_exp.llm.providers.vllm, openai" 2>/dev/null \
  || fail "mcu_exp or openai is not importable by '$PY' (pip install -e . in the vLLM environment)"

# One timed generation through a backend; prints samples/s. $1 = backend, $2 = base_url or "".
bench() {
  "$PY" - "$1" "$2" <<'PY'
import os, sys, time
from mcu_exp.config import ModelConfig
from mcu_exp.llm.contract import GenerationRequest, Message, SampleJob
from mcu_exp.llm.factory import build_backend

backend, base_url = sys.argv[1], sys.argv[2] or None
cfg = ModelConfig(name="gpu-check", backend=backend, model_id=os.environ["MODEL"], base_url=base_url,
                  max_model_len=int(os.environ["MAX_MODEL_LEN"]), n_per_request=16, max_concurrency=32)
n = int(os.environ["SAMPLES_PER_PROMPT"])
jobs = [SampleJob(GenerationRequest(messages=(Message("user", f"Summarise in one sentence what a Java method "
                                                              f"named compute{i}() that returns {i} * x might do."),),
                                    n=n, temperature=0.8, top_p=0.95, max_new_tokens=48, seed=i),
                  tuple(range(n)))
        for i in range(int(os.environ["PROMPTS"]))]
model = build_backend(cfg)
start = time.monotonic()
out = list(model.stream(jobs))
elapsed = time.monotonic() - start
assert len(out) == len(jobs) * n, f"expected {len(jobs) * n} samples, got {len(out)}"
assert any(s.text.strip() for _, _, s in out), "every sample is empty"
tokens = sum(s.completion_tokens for _, _, s in out)
print(f"{backend}: {len(out)} samples in {elapsed:.1f}s = {len(out) / elapsed:.1f} samples/s, "
      f"{tokens / elapsed:.0f} output tokens/s; e.g. {out[0][2].text.strip()[:80]!r}")
PY
}

echo "== vllm (in-process LLM engine), model $MODEL"
bench vllm ""

echo "== vllm serve + openai_compatible, port $PORT"
LOG="$(mktemp -t vllm-serve.XXXXXX.log)"
"$PY" -m vllm.entrypoints.openai.api_server --model "$MODEL" --served-model-name "$MODEL" \
  --port "$PORT" --host 127.0.0.1 --max-model-len "$MAX_MODEL_LEN" >"$LOG" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq "$SERVE_WAIT_S"); do
  kill -0 "$SERVER" 2>/dev/null || { tail -20 "$LOG" >&2; fail "vllm serve exited (log: $LOG)"; }
  "$PY" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/v1/models', timeout=2)" \
    2>/dev/null && break
  sleep 1
done
"$PY" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/v1/models', timeout=2)" \
  2>/dev/null || fail "vllm serve did not come up in ${SERVE_WAIT_S}s (log: $LOG)"
bench openai_compatible "http://127.0.0.1:$PORT/v1"
echo "gpu_check: ok"
