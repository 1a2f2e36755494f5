"""A process the PID-namespace tests start inside ``unshare --pid --fork`` (another container's
view of the same host name).

``generate FIELDS CACHE_DIR PROMPT N``: generate N samples of PROMPT through the cache with the
ModelConfig FIELDS (JSON); prints the texts as one JSON line.
``owner GO``: print the tags a job of this process gives its MLflow run (JSON), then wait
until the file GO exists.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def generate(fields: str, cache_dir: str, prompt: str, n: str) -> None:
    from mcu_exp.config import ModelConfig
    from mcu_exp.llm import CachedGenerator, GenerationRequest, Message

    request = GenerationRequest(messages=(Message("user", prompt),), n=int(n), max_new_tokens=16)
    results = CachedGenerator(ModelConfig(**json.loads(fields)), cache_dir, progress=False).generate([request])
    print(json.dumps(results[0].texts), flush=True)


def owner(go: str) -> None:
    from mcu_exp.tracking.mlflow_run import owner_tags

    print(json.dumps(owner_tags()), flush=True)
    deadline = time.monotonic() + 120
    while not Path(go).exists() and time.monotonic() < deadline:
        time.sleep(0.05)


if __name__ == "__main__":
    {"generate": generate, "owner": owner}[sys.argv[1]](*sys.argv[2:])
