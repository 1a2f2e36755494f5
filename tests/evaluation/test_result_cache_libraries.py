"""The result cache's key holds the version of every library a cached value is computed with:
an upgrade of one (krippendorff for the ceiling, lizard for the code metrics) starts new
entries instead of serving values the old version computed."""

from __future__ import annotations

import ast
import importlib.util
import sys
from importlib import metadata
from pathlib import Path

import pytest

from mcu_exp import result_cache
from mcu_exp.evaluation.sensitivity import EPSILON_CODE
from mcu_exp.job.alignment import SCORE_CODE
from mcu_exp.job.measures import CEILING_CODE, MEASURE_CODE
from mcu_exp.result_cache import LIBRARIES, cached_result

RENDERING_ONLY = {"rich"}  # imported by cached modules to print tables; computes no cached value


def third_party_imports(module: str) -> set[str]:
    """The top-level names of the non-standard, non-mcu_exp packages ``module`` imports."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin
    found: set[str] = set()
    for node in ast.walk(ast.parse(Path(spec.origin).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names and name != "mcu_exp"}


def test_every_library_the_cached_computations_import_is_in_the_key() -> None:
    distributions = metadata.packages_distributions()
    missing = {}
    for module in {*MEASURE_CODE, *CEILING_CODE, *EPSILON_CODE, *SCORE_CODE}:
        for name in third_party_imports(module) - RENDERING_ONLY:
            dists = {d.lower() for d in distributions.get(name, [name])}
            if not dists & set(LIBRARIES):
                missing[name] = module
    assert not missing, f"imported by cached computations but not in result_cache.LIBRARIES: {missing}"


@pytest.mark.parametrize("library", ["krippendorff", "lizard", "scipy"])
def test_another_version_of_a_library_is_another_entry(
    library: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    result_cache._library_versions.cache_clear()
    assert cached_result(tmp_path, "demo", [1], compute) == 1
    assert cached_result(tmp_path, "demo", [1], compute) == 1 and len(calls) == 1  # a hit
    installed = metadata.version

    def version(name: str) -> str:
        return "0.0.0-other" if name == library else installed(name)

    monkeypatch.setattr(metadata, "version", version)
    result_cache._library_versions.cache_clear()
    try:
        assert cached_result(tmp_path, "demo", [1], compute) == 2  # recomputed under the new version
    finally:
        result_cache._library_versions.cache_clear()
