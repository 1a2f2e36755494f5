"""Run cached generation in batch mode against the fake batch server (a subprocess the kill
test SIGKILLs while its batch runs).

argv: base_url, cache_dir, JSON list of prompts. Prints the texts of every request when done.
"""

from __future__ import annotations

import json
import sys

from mcu_exp.config import ModelConfig
from mcu_exp.llm import CachedGenerator, GenerationRequest, Message


def main() -> None:
    base_url, cache_dir, prompts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    cfg = ModelConfig(
        name="fake-openai",
        backend="openai",
        model_id="fake-model",
        base_url=base_url,
        timeout_s=5.0,
        max_new_tokens=16,
        n_per_request=2,
        batch=True,
        batch_poll_s=0.05,
        batch_poll_max_s=0.1,
    )
    requests = [GenerationRequest(messages=(Message("user", p),), n=2, max_new_tokens=16) for p in prompts]
    results = CachedGenerator(cfg, cache_dir, progress=False).generate(requests)
    print(json.dumps([r.texts for r in results]))


if __name__ == "__main__":
    main()
