"""A replay promises bit-identical numbers only on a machine with the bundle's floating-point
kernels: the comparison names each fact that differs (CPU flags, numpy's run-time SIMD choice,
the BLAS library's kernels, numerical library versions) and compares only what a bundle recorded."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from mcu_exp.bundle.export import environment
from mcu_exp.bundle.machine import kernel_differences


@pytest.fixture(scope="module")
def here() -> dict[str, Any]:
    return environment()


def test_this_machine_matches_itself(here: dict[str, Any]) -> None:
    assert kernel_differences(here, copy.deepcopy(here)) == ()
    assert here["numeric_dispatch"]["numpy_simd"], "numpy's enabled SIMD extensions are recorded"


def test_a_cpu_flag_more_or_less_is_named(here: dict[str, Any]) -> None:
    recorded = copy.deepcopy(here)
    recorded["cpu_flags"] = [f for f in here["cpu_flags"] if f != here["cpu_flags"][-1]] + ["avx512_imaginary"]
    (difference,) = kernel_differences(recorded, here)
    assert difference.startswith("CPU flags: this machine lacks avx512_imaginary; adds ")
    assert here["cpu_flags"][-1] in difference


def test_numerical_library_versions_count_but_the_version_under_test_does_not(here: dict[str, Any]) -> None:
    recorded = copy.deepcopy(here)
    recorded["packages"]["numpy"] = "1.0.0"
    recorded["packages"]["mcu_exp"] = "0.0.1"
    assert kernel_differences(recorded, here) == (f"numpy {here['packages']['numpy']} here, 1.0.0 in the bundle",)


def test_an_older_bundle_is_compared_on_what_it_recorded(here: dict[str, Any]) -> None:
    recorded = {k: v for k, v in here.items() if k != "numeric_dispatch"}
    assert kernel_differences(recorded, here) == ()
    assert kernel_differences({}, here) == ()


def test_restricting_numpys_kernels_or_blass_core_makes_another_machine(here: dict[str, Any]) -> None:
    """The same CPU with numpy's AVX-512 kernels switched off and OpenBLAS forced to Haswell's
    computes as another machine would: the replay must not demand bit-identity there."""
    script = "import json; from mcu_exp.bundle.export import environment; print(json.dumps(environment()))"
    env = {
        **os.environ,
        "NPY_DISABLE_CPU_FEATURES": "AVX512_ICL AVX512_SPR X86_V4",
        "OPENBLAS_CORETYPE": "Haswell",
    }
    restricted = json.loads(
        subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    )
    differences = kernel_differences(here, restricted)
    assert any(d.startswith("kernel variables NPY_DISABLE_CPU_FEATURES=") for d in differences), differences
    if "X86_V4" in here["numeric_dispatch"]["numpy_simd"]:  # a CPU with AVX-512: numpy dropped it
        assert any(d.startswith("numpy's SIMD kernels: this machine lacks ") for d in differences), differences


def test_a_hand_edited_environment_of_the_wrong_shape_is_compared_not_a_crash(here: dict[str, Any]) -> None:
    recorded = {"cpu_flags": "avx2", "packages": ["numpy"], "numeric_dispatch": {"numpy_simd": 3, "blas_cores": []}}
    assert kernel_differences(recorded, here)[0].startswith("CPU flags: this machine adds ")
