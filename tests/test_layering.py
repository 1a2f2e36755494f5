"""The package's floors: a module imports only from its own floor or below (AST, lazy imports too).

A job flows top-down (docs/architecture.md): the entry point composes, the pipeline runs
proxies, proxies ask the models and scorers, everything reads the foundation. An import from
a lower floor to a higher one (e.g. tracking reading report) ties the floors into a knot in
which no layer can be tested or replaced alone; this test names each such arrow.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "mcu_exp"

# (module prefix, floor); the longest matching prefix decides. Higher floors may import lower.
FLOORS: tuple[tuple[str, int], ...] = (
    # 0 the foundation: names, settings, random streams, secrets, the registry core, raw stores
    ("names", 0),
    ("rng_streams", 0),
    ("pid_space", 0),
    ("redact", 0),
    ("markdown", 0),
    ("registry", 0),
    ("plugin_guard", 0),
    ("settings", 0),
    ("console", 0),
    ("interrupts", 0),
    ("recent", 0),
    ("yaml_limits", 0),
    ("config", 0),
    ("config.schema", 0),
    ("config.suggest", 0),
    ("store", 0),
    ("store.sql", 0),
    ("store.sqlite", 0),
    ("store.postgres", 0),
    ("store.faults", 0),
    ("bundle", 0),
    ("bundle.reads", 0),
    ("bundle.safety", 0),
    ("bundle.shape", 0),
    ("result_cache", 0),
    # 1 the domain: data and labels, statistics, decision rules, measures, models, scorers
    ("data", 1),
    ("evaluation", 1),
    ("calibration", 1),
    ("measures", 1),
    ("llm", 1),
    ("scoring", 1),
    ("ceiling", 1),
    # 2 what combines them: proxies, the config checks, the cache CLI
    ("proxies", 2),
    ("config.checks", 2),
    ("store.cli", 2),
    # 3 recording a run
    ("tracking", 3),
    ("bundle.archive", 3),
    ("bundle.export", 3),
    ("bundle.job", 3),
    # 4 reading finished runs
    ("report", 4),
    ("compare", 4),
    ("notebook", 4),
    ("tune", 4),
    # 5 a job
    ("outputs", 5),
    ("pipeline", 5),
    ("job", 5),
    ("listing", 6),
    ("plugins", 5),
    ("plugin", 5),
    # 6 commands over jobs, and the entry point
    ("bundle.replay", 6),
    ("bundle.cli", 6),
    ("data.reliability_cli", 6),
    ("llm.model_cli", 6),
    ("app", 7),
    ("entry", 7),
    ("__main__", 7),
)


def module_name(path: Path) -> str:
    """``a.b`` for src/mcu_exp/a/b.py (a package's ``__init__`` is the package)."""
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def floor(module: str) -> int:
    """The floor of ``module`` (its longest prefix in :data:`FLOORS`); a KeyError for a module
    no entry covers, so a new top-level module must be placed."""
    best: tuple[int, int] | None = None
    for prefix, level in FLOORS:
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > best[0]:
                best = (len(prefix), level)
    if best is None:
        raise KeyError(f"mcu_exp.{module} is on no floor: add it to FLOORS in tests/test_layering.py")
    return best[1]


def imports(path: Path) -> set[str]:
    """Every ``mcu_exp`` module ``path`` imports (top-level or inside functions), without the
    ``mcu_exp.`` prefix; ``from mcu_exp.x import y`` counts as ``x.y`` when y is a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "mcu_exp" or node.module.startswith("mcu_exp."):
                base = node.module.removeprefix("mcu_exp").lstrip(".")
                names = [f"{base}.{a.name}".lstrip(".") for a in node.names]
                names = [n if _is_module(n) else base for n in names]
        elif isinstance(node, ast.Import):
            names = [a.name.removeprefix("mcu_exp.") for a in node.names if a.name.startswith("mcu_exp.")]
        found.update(n for n in names if n)
    return found


def _is_module(dotted: str) -> bool:
    target = SRC.joinpath(*dotted.split("."))
    return target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()


def test_every_module_has_a_floor() -> None:
    for path in SRC.rglob("*.py"):
        name = module_name(path)
        if name:
            floor(name)


def test_no_import_goes_up_a_floor() -> None:
    upward = []
    for path in sorted(SRC.rglob("*.py")):
        name = module_name(path)
        if not name:
            continue
        for target in sorted(imports(path)):
            if floor(target) > floor(name):
                upward.append(f"{name} (floor {floor(name)}) imports {target} (floor {floor(target)})")
    assert not upward, "imports from a lower floor to a higher one:\n" + "\n".join(upward)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from mcu_exp.report.cli import main\n    from mcu_exp import names\n")
    assert imports(probe) == {"report.cli", "names"}
    assert floor("tracking.sweep") < floor("report.cli")
