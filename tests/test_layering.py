"""The package's floors: a folder imports only from its own floor or below, and no folders
import each other in a loop (AST, lazy imports too).

A job flows top-down (docs/architecture.md): the command line calls the entry point's work,
the pipeline runs a job's stages, proxies ask the models and scorers, everything reads the
foundation. Each folder (or top-level module) stands on one floor as a whole. An import from a
lower floor to a higher one (e.g. tracking reading report) ties the floors into a knot in which
no layer can be tested or replaced alone, and so does a loop between two folders of one floor
(data reading evaluation reading data); these tests name each such arrow and each loop.
Imports between the modules of one folder are the folder's own business.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "mcu_exp"

# (folder or top-level module, floor). Higher floors may import lower; a folder's modules share its floor.
FLOORS: tuple[tuple[str, int], ...] = (
    # 0 the foundation: names, settings (the config schema), random streams, secrets, the
    # registry core, the caches' stores and what a job read from them
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
    ("collector", 0),
    ("user_cache", 0),
    ("recent", 0),
    ("yaml_limits", 0),
    ("config", 0),
    ("store", 0),
    ("result_cache", 0),
    # 1 the domain: data and labels, statistics, the humans' ceiling, decision rules, measures,
    # models, scorers (each checks its own config section)
    ("data", 1),
    ("evaluation", 1),
    ("ceiling", 1),
    ("calibration", 1),
    ("measures", 1),
    ("llm", 1),
    ("scoring", 1),
    ("counterfactual", 1),
    # 2 what combines them: proxies
    ("proxies", 2),
    # 3 recording a run: MLflow, run bundles
    ("tracking", 3),
    ("bundle", 3),
    # 4 reading finished runs
    ("report", 4),
    ("compare", 4),
    ("notebook", 4),
    ("tune", 4),
    # 5 a job: its stages, its checks, its files, the plugins it loads
    ("outputs", 5),
    ("job", 5),
    ("pipeline", 5),
    ("plugins", 5),
    ("plugin", 5),
    # 6 the command line: one module per subcommand
    ("cli", 6),
    # 7 the entry point
    ("app", 7),
    ("entry", 7),
    ("__main__", 7),
)


def module_name(path: Path) -> str:
    """``a.b`` for src/mcu_exp/a/b.py (a package's ``__init__`` is the package)."""
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def folder(module: str) -> str:
    """The folder (or top-level module) ``module`` belongs to: its first name."""
    return module.split(".")[0]


def floor(module: str) -> int:
    """The floor of ``module``'s folder in :data:`FLOORS`; a KeyError for a folder no entry
    covers, so a new folder or top-level module must be placed."""
    placed = dict(FLOORS)
    if folder(module) not in placed:
        raise KeyError(f"mcu_exp.{folder(module)} is on no floor: add it to FLOORS in tests/test_layering.py")
    return placed[folder(module)]


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


def folder_imports() -> dict[tuple[str, str], list[str]]:
    """``{(folder, folder it imports): ["module imports module", …]}`` over the package, one
    folder's imports of itself left out."""
    arrows: dict[tuple[str, str], list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        name = module_name(path)
        if not name:
            continue
        for target in sorted(imports(path)):
            if folder(target) != folder(name):
                arrows.setdefault((folder(name), folder(target)), []).append(f"{name} imports {target}")
    return arrows


def loops(arrows: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    """The folders that import each other in a loop: each strongly connected set of more than
    one folder (Tarjan's algorithm), sorted."""
    graph: dict[str, set[str]] = {}
    for a, b in arrows:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                top = stack.pop()
                members.append(top)
                if top == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


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


def test_no_folders_import_each_other_in_a_loop() -> None:
    arrows = folder_imports()
    found = loops(arrows)
    lines = []
    for members in found:
        lines.append(" <-> ".join(members) + ":")
        lines += [f"  {m}" for (a, b), why in sorted(arrows.items()) if a in members and b in members for m in why]
    assert not found, "folders that import each other in a loop:\n" + "\n".join(lines)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from mcu_exp.report.build import make_report\n    from mcu_exp import names\n")
    assert imports(probe) == {"report.build", "names"}
    assert floor("tracking.sweep") < floor("report.build")
    assert floor("cli.report") > floor("report.build") > floor("evaluation.registry")


def test_the_check_sees_a_loop_between_folders() -> None:
    arrows = {
        ("data", "evaluation"): ["data.x imports evaluation.y"],
        ("evaluation", "data"): ["evaluation.y imports data.z"],
    }
    assert loops(arrows) == [["data", "evaluation"]]
    assert loops({("a", "b"): [], ("b", "c"): []}) == []
