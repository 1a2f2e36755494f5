"""Generate a few requests with the tiny Llama through the cache, in a process a test can kill or race.

argv: model folder, cache_dir, first request, last request (exclusive). Prints ``ready`` once
the model is loaded, then ``done`` when every sample is in the cache.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcu_exp.llm import CachedGenerator, LocalBackend
from support.local_llm import requests, tiny_config


def main() -> None:
    """Load the model, say so, generate the requests through the cache, say so."""
    folder, cache_dir, first, last = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    backend = LocalBackend(tiny_config(folder))
    backend.load()
    print("ready", flush=True)
    CachedGenerator(backend.cfg, cache_dir, progress=False, backend=backend).generate(requests(first, last))
    print("done", flush=True)


if __name__ == "__main__":
    main()
