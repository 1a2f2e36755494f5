"""Remote and GPU backends: one module per provider, each exposing
``create_backend(cfg: ModelConfig, *, progress: bool = True)`` and ``identity(cfg)``.

Nothing here imports a provider SDK at import time; each provider imports its client inside
``create_backend`` and answers a missing SDK with a one-line ``pip install`` hint.
"""
