"""Compile and run a C program with gcc: does an edited program print what the original did?

The atoms-of-confusion programs are bare ``main`` functions without ``#include`` lines, as the
study's subjects saw them; :func:`run_c` prepends the standard headers they use, compiles with
warnings off (``void main``, implicit declarations) and runs the binary with a time limit.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

GCC = "/usr/bin/gcc"
PRELUDE = "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <math.h>\n#include <limits.h>\n"
TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Run:
    """A program's outcome: whether it compiled, its exit status, stdout, and gcc's errors."""

    compiled: bool
    returncode: int | None
    stdout: str
    errors: str = ""


def gcc_path() -> str | None:
    """The gcc to use: /usr/bin/gcc, else one on PATH, else None."""
    return GCC if Path(GCC).exists() else shutil.which("gcc")


def run_c(code: str, prelude: str = PRELUDE, timeout_s: float = TIMEOUT_S) -> Run:
    """Compile ``prelude + code`` with gcc and run it; raises FileNotFoundError without gcc."""
    gcc = gcc_path()
    if gcc is None:
        raise FileNotFoundError("gcc is not installed")
    with tempfile.TemporaryDirectory(prefix="mcu-cf-") as tmp:
        src, exe = Path(tmp) / "prog.c", Path(tmp) / "prog"
        src.write_text(prelude + code, encoding="utf-8")
        built = subprocess.run(
            [gcc, "-w", "-std=gnu99", "-O0", "-o", str(exe), str(src), "-lm"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        if built.returncode != 0:
            return Run(False, None, "", built.stderr[-2000:])
        ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=timeout_s, check=False)
        return Run(True, ran.returncode, ran.stdout)


def prints_same(original: str, edited: str) -> bool:
    """Whether the edited program compiles and prints exactly what the original prints."""
    a, b = run_c(original), run_c(edited)
    return a.compiled and b.compiled and a.stdout == b.stdout
