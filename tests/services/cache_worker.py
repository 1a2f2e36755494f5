"""Generate through the shared PostgreSQL cache against a fake OpenAI server (a subprocess the
tests run two at a time, or SIGKILL midway).

argv: base_url, cache_dir, cache_url, JSON list of [prompt, n, seed] requests. Prints the texts
of every request as one JSON line when done.
"""

from __future__ import annotations

import json
import sys

from mcu_exp.config import ModelConfig
from mcu_exp.llm import CachedGenerator, GenerationRequest, Message


def main() -> None:
    base_url, cache_dir, cache_url, spec = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    cfg = ModelConfig(
        name="fake-openai",
        backend="openai",
        model_id="fake-model",
        base_url=base_url,
        timeout_s=30.0,
        max_concurrency=2,
        n_per_request=1,
        max_new_tokens=16,
        max_retries=2,
        backoff_initial_s=0.01,
        backoff_max_s=0.02,
    )
    requests = [GenerationRequest(messages=(Message("user", p),), n=n, seed=s, max_new_tokens=16) for p, n, s in spec]
    generator = CachedGenerator(cfg, cache_dir, progress=False, cache_url=cache_url, poll_s=0.05)
    results = generator.generate(requests)
    print(json.dumps({"texts": [r.texts for r in results], "stats": generator.stats}))


if __name__ == "__main__":
    main()
