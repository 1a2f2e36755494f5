"""``mcu-exp cache export|import``: move cache entries between a folder of SQLite files (one
machine's ``cache.dir``) and a shared PostgreSQL store (``cache.url``).

A laptop's cache seeds a cluster run (``import``), and a cluster's results come back to a
laptop (``export``). Both directions copy the generated samples with their request parts and
the BERTScore values with their text lengths and scorer specs; an entry the destination has
already is kept (a sample replaces only a legacy blank one), so copying twice changes nothing
and an interrupted copy is finished by running it again. Failed samples are not copied (a
run asks for them again) nor are leases (they belong to the processes of one store).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from mcu_exp.interrupts import raise_if_interrupted
from mcu_exp.store.table_copy import TABLE_LABELS, Cache, copy_tables

PROG = "mcu-exp cache"
URL_ENV = "MCU_EXP_CACHE_URL"
GENERATIONS, SCORES = "generations.sqlite", "bertscore.sqlite"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The command's arguments (``export`` and ``import``)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Move cache entries (generated samples, BERTScore values) between a folder of SQLite files "
            "(one machine's cache.dir) and a shared PostgreSQL store (cache.url). An entry the destination "
            "has already is kept, so a copy can be run again."
        ),
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, folder, what in (
        ("export", "DEST", "copy the shared store's entries into the SQLite files of folder DEST (created if needed)"),
        (
            "import",
            "SOURCE",
            "copy the entries of the SQLite files in folder SOURCE (a cache.dir) into the shared store",
        ),
    ):
        sub = actions.add_parser(
            action,
            help=what,
            description=what[0].upper() + what[1:] + ".",
            epilog=f"example: {prog} {action} outputs/cache --url postgresql://me@db-host/mcu",
        )
        sub.add_argument(
            "folder", metavar=folder, type=Path, help=f"a cache folder holding {GENERATIONS} and/or {SCORES}"
        )
        sub.add_argument(
            "--url",
            default=os.environ.get(URL_ENV),
            help=f"the shared store, postgresql://user@host:port/database (default: ${URL_ENV}); "
            "no password in it: PGPASSWORD or ~/.pgpass",
        )
        sub.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def transfer(folder: Path, url: str, export: bool, progress: bool = True) -> dict[str, tuple[int, int]]:
    """Copy every entry between the SQLite files in ``folder`` and the store at ``url``
    (``export``: from the store to the folder); the counts of :func:`~mcu_exp.store.table_copy.copy_tables`."""
    from mcu_exp.llm.cache import EXPORTED, GenerationCache
    from mcu_exp.scoring.score_cache import TABLES, ScoreCache

    if not export:
        present = [name for name in (GENERATIONS, SCORES) if (folder / name).exists()]
        if not present:
            raise FileNotFoundError(
                f"{folder}: no {GENERATIONS} nor {SCORES} in it; expected a cache folder "
                "(a job's cache.dir, outputs/cache by default)"
            )
    counts: dict[str, tuple[int, int]] = {}
    with ExitStack() as stack:
        caches: tuple[tuple[str, Callable[[Any], Cache], list[str]], ...] = (
            (GENERATIONS, GenerationCache, list(EXPORTED)),
            (SCORES, ScoreCache, list(TABLES)),
        )
        for name, opener, tables in caches:
            if not export and not (folder / name).exists():
                continue
            if export:  # an unreachable store leaves no new file in the folder
                store = stack.enter_context(opener(url))
                local = stack.enter_context(opener(folder / name))
            else:  # a bad source file shows before any connection
                local = stack.enter_context(opener(folder / name))
                store = stack.enter_context(opener(url))
            source, dest = (store, local) if export else (local, store)
            counts.update(copy_tables(source, dest, tables, progress))
    return counts


def render(counts: dict[str, tuple[int, int]]) -> str:
    """One line per table: rows copied and how many of them were new."""
    return "\n".join(
        f"  {TABLE_LABELS[t]}: {read:,} ({added:,} new, {read - added:,} there already)"
        for t, (read, added) in counts.items()
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry: ``mcu-exp cache export|import FOLDER [--url URL]``."""
    args = build_parser().parse_args(argv)
    from mcu_exp.redact import mask_known, remember, secret_values
    from mcu_exp.store.faults import StoreFault, is_disk_full
    from mcu_exp.store.postgres import StoreError, check_url, conninfo_secrets, redact_conninfo
    from mcu_exp.store.sql import is_url

    # A password in --url, in any of libpq's forms (user:pass@, ?password=, ?sslpassword=, a
    # key=value string), is masked in every line this command prints.
    remember(secret_values({"url": args.url or ""}) | conninfo_secrets(args.url or ""))

    def clean(text: str) -> str:
        return mask_known(text.replace(args.url, redact_conninfo(args.url)) if args.url else text)

    try:
        if not args.url:
            raise StoreError(f"no shared store given: pass --url postgresql://user@host:port/database or set {URL_ENV}")
        if not is_url(args.url):
            raise StoreError(f"--url {args.url}: expected postgresql://user@host:port/database")
        check_url(args.url, key="--url")
        counts = transfer(
            args.folder, args.url, export=args.action == "export", progress=not args.quiet and sys.stderr.isatty()
        )
    except (ValueError, OSError) as exc:
        raise_if_interrupted(exc)
        message = " | ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
        if (
            isinstance(exc, StoreFault) and exc.advice and not is_disk_full(exc)
        ):  # a job's advice ("rerun") does not fit
            message = f"{exc.fact}; fix or move it and run the command again (what was copied stays)"
        message = re.sub(r"^cache\.url\b", "--url", message)  # the store's errors name the jobs' key
        print(f"{PROG} {args.action}: error: {clean(message)}", file=sys.stderr)
        raise SystemExit(1) from None
    where = f"{args.url} -> {args.folder}" if args.action == "export" else f"{args.folder} -> {args.url}"
    print(clean(f"{args.action}ed {where}:") + f"\n{render(counts)}")
