"""A small paired human study in the generic format: three Java methods, each with its twin
whose names were made meaningless (``variant`` original / renamed), read by four participants
who each answered three questions on every program."""

from __future__ import annotations

import csv
from pathlib import Path

METHODS = {
    "sum": "int sum(int[] values) {\n    int total = 0;\n    for (int value : values) {\n        total += value;\n    }\n    return total;\n}",
    "max": "int max(int first, int second) {\n    // the larger of the two\n    return first > second ? first : second;\n}",
    "count": "int count(String text, char wanted) {\n    int found = 0;\n    for (char c : text.toCharArray()) {\n        if (c == wanted) found++;\n    }\n    return found;\n}",
}
RENAMED = {
    "sum": "int sum(int[] v1) {\n    int v2 = 0;\n    for (int v3 : v1) {\n        v2 += v3;\n    }\n    return v2;\n}",
    "max": "int max(int v1, int v2) {\n    // the larger of the two\n    return v1 > v2 ? v1 : v2;\n}",
    "count": "int count(String v1, char v2) {\n    int v3 = 0;\n    for (char v4 : v1.toCharArray()) {\n        if (v4 == v2) v3++;\n    }\n    return v3;\n}",
}
# correct answers (of 3) per participant: originals, then the renamed twins
CORRECT = {
    "p1": {"sum": 3, "max": 3, "count": 2, "sum-r": 2, "max-r": 3, "count-r": 1},
    "p2": {"sum": 2, "max": 3, "count": 3, "sum-r": 1, "max-r": 2, "count-r": 2},
    "p3": {"sum": 3, "max": 2, "count": 2, "sum-r": 3, "max-r": 1, "count-r": 0},
    "p4": {"sum": 1, "max": 3, "count": 3, "sum-r": 0, "max-r": 3, "count-r": 2},
}


def write_paired_study(folder: Path) -> Path:
    """Write ``programs.csv`` (with ``pair`` and ``variant``) and ``evaluations.csv`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "programs.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["program_id", "language", "code", "pair", "variant"])
        for name, code in METHODS.items():
            writer.writerow([name, "java", code, f"{name}-r", "original"])
        for name, code in RENAMED.items():
            writer.writerow([f"{name}-r", "java", code, name, "renamed"])
    with (folder / "evaluations.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["program_id", "participant_id", "correct", "total"])
        for participant, answers in CORRECT.items():
            for program, correct in answers.items():
                writer.writerow([program, participant, correct, 3])
    return folder
