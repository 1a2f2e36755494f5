"""The embedded SmolLM2 model, loaded once per test session for the local-backend tests."""

from __future__ import annotations

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"


@pytest.fixture(scope="session")
def smollm_cfg():
    """The shipped SmolLM2 ModelConfig with short generations."""
    from local_llm_support import model_config

    return model_config()


@pytest.fixture(scope="session")
def smollm(smollm_cfg):
    """A loaded :class:`LocalBackend` shared by every test that needs the model.

    One torch thread: the test box has 2 shared cores, and the subprocess tests run a
    second model beside this one (workers get OMP_NUM_THREADS=1 too).
    """
    import torch

    from mcu_exp.llm import LocalBackend

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    backend = LocalBackend(smollm_cfg)
    backend.load()
    yield backend
    torch.set_num_threads(threads)
