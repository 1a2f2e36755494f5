"""Model backends behind one batched contract, and the generation cache in front of them.

Importing this package is light: torch and transformers load only when a local model does.
"""

from mcu_exp.llm.cache import GenerationCache
from mcu_exp.llm.cache_keys import sample_key
from mcu_exp.llm.contract import Backend, GenerationRequest, GenerationResult, Message, Sample, SampleJob
from mcu_exp.llm.errors import BackendError, UnknownBackendError
from mcu_exp.llm.factory import KNOWN_BACKENDS, backend_identity, build_backend, capabilities
from mcu_exp.llm.generator import CachedGenerator, request_for, sum_usage
from mcu_exp.llm.local import LocalBackend

__all__ = [
    "KNOWN_BACKENDS",
    "Backend",
    "BackendError",
    "CachedGenerator",
    "GenerationCache",
    "GenerationRequest",
    "GenerationResult",
    "LocalBackend",
    "Message",
    "Sample",
    "SampleJob",
    "UnknownBackendError",
    "backend_identity",
    "build_backend",
    "capabilities",
    "request_for",
    "sample_key",
    "sum_usage",
]
