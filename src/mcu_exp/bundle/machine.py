"""Whether this machine computes with the same floating-point kernels as the one a bundle was
made on: the condition under which a replay can promise bit-identical numbers.

Two machines of the same kind can still round differently: numpy and OpenBLAS choose their
SIMD kernels at run time from the CPU's flags (an AVX-512 generation more or less changes the
order of a sum), environment variables can restrict that choice, and another version of a
numerical library is another computation. A replay on a machine that differs in any of these
agrees with the bundle within :data:`mcu_exp.bundle.replay.RTOL`; bit-identity is a claim only
where none differs. Facts a bundle does not record (one made before they were) are not compared.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

# Variables that steer the numerical libraries' choice of kernels or their reproducibility mode.
DISPATCH_VARIABLES = (
    "NPY_DISABLE_CPU_FEATURES",
    "NPY_ENABLE_CPU_FEATURES",
    "OPENBLAS_CORETYPE",
    "MKL_DEBUG_CPU_TYPE",
    "MKL_ENABLE_INSTRUCTIONS",
    "MKL_CBWR",
    "ATEN_CPU_CAPABILITY",
    "ONEDNN_MAX_CPU_ISA",
)
# Not compared: the version under test (a replay checks this code against the bundle's) and
# packages that record and compose but compute no number.
_NOT_NUMERICAL = ("mcu_exp", "mlflow", "hydra-core")
_SHOWN = 4  # flags named in a difference before "and N more"


def numeric_dispatch() -> dict[str, Any]:
    """The kernels chosen at run time in this process: the SIMD extensions numpy enabled, the
    core type each loaded BLAS library picked (threadpoolctl), and the variables set that steer them."""
    found: dict[str, Any] = {"variables": {name: os.environ[name] for name in DISPATCH_VARIABLES if name in os.environ}}
    try:
        from numpy._core._multiarray_umath import __cpu_features__

        found["numpy_simd"] = sorted(name for name, enabled in __cpu_features__.items() if enabled)
    except ImportError:  # another numpy layout: the flags and the BLAS build still decide
        pass
    try:
        from threadpoolctl import threadpool_info

        found["blas_cores"] = {
            f"{info.get('internal_api')} {info.get('version')}": info.get("architecture")
            for info in threadpool_info()
            if info.get("user_api") == "blas"
        }
    except ImportError:
        pass
    return found


def kernel_differences(recorded: Mapping[str, Any], here: Mapping[str, Any]) -> tuple[str, ...]:
    """How this machine's environment ``here`` differs from a bundle's ``recorded`` one in what
    decides floating-point results (empty: bit-identical results are expected). Both are
    :func:`mcu_exp.bundle.export.environment` dictionaries."""
    differences: list[str] = []
    for key, label in (("machine", "architecture"), ("python", "Python")):
        if key in recorded and recorded[key] != here.get(key):
            differences.append(f"{label} {here.get(key)} here, {recorded[key]} in the bundle")
    flags, ours_flags = _names(recorded.get("cpu_flags")), _names(here.get("cpu_flags"))
    if "cpu_flags" in recorded and flags != ours_flags:
        differences.append("CPU flags: " + _flag_change(flags, ours_flags))
    if "numpy_blas" in recorded and recorded["numpy_blas"] != here.get("numpy_blas"):
        differences.append("numpy's BLAS build")
    packages, ours = _mapping(recorded.get("packages")), _mapping(here.get("packages"))
    for name in sorted(packages):
        if name not in _NOT_NUMERICAL and packages.get(name) != ours.get(name):
            differences.append(f"{name} {ours.get(name, 'absent')} here, {packages.get(name, 'absent')} in the bundle")
    dispatch, current = _mapping(recorded.get("numeric_dispatch")), _mapping(here.get("numeric_dispatch"))
    simd, ours_simd = _names(dispatch.get("numpy_simd")), _names(current.get("numpy_simd"))
    if "numpy_simd" in dispatch and simd != ours_simd:
        differences.append("numpy's SIMD kernels: " + _flag_change(simd, ours_simd))
    cores, found = _mapping(dispatch.get("blas_cores")), _mapping(current.get("blas_cores"))
    for library in sorted(set(cores) & set(found)):
        if cores[library] != found[library]:
            differences.append(f"{library} kernels {found[library]} here, {cores[library]} in the bundle")
    if "variables" in dispatch and dispatch["variables"] != current.get("variables", {}):
        here_set, there = _variables(_mapping(current.get("variables"))), _variables(_mapping(dispatch["variables"]))
        differences.append(f"kernel variables {here_set} here, {there} in the bundle")
    return tuple(differences)


def _mapping(found: Any) -> Mapping[str, Any]:
    """``found`` when it is a mapping (a hand-edited manifest may hold anything), else empty."""
    return found if isinstance(found, Mapping) else {}


def _names(found: Any) -> set[str]:
    """A list of flag names as a set (anything else: empty)."""
    return {str(name) for name in found} if isinstance(found, list) else set()


def _flag_change(recorded: set[str], here: set[str]) -> str:
    """'lacks a, b; adds c' between two sets of flags, the first few of each named."""
    parts = []
    for verb, names in (("lacks", recorded - here), ("adds", here - recorded)):
        if names:
            shown = sorted(names)[:_SHOWN]
            more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
            parts.append(f"{verb} {', '.join(shown)}{more}")
    return "this machine " + "; ".join(parts)


def _variables(found: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(found.items())) or "none"
