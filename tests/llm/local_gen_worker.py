"""Generate a few SmolLM2 requests through the cache, in a process a test can kill or race.

argv: cache_dir, first request, last request (exclusive). Prints ``ready`` once the model is
loaded, then ``done`` when every sample is in the cache.
"""

from __future__ import annotations

import sys

from local_llm_support import model_config, requests

from mcu_exp.llm import CachedGenerator, LocalBackend


def main() -> None:
    cache_dir, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    backend = LocalBackend(model_config())
    backend.load()
    print("ready", flush=True)
    CachedGenerator(backend.cfg, cache_dir, progress=False, backend=backend).generate(requests(first, last))
    print("done", flush=True)


if __name__ == "__main__":
    main()
