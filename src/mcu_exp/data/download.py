"""Pinned, checksummed download of the Scalabrino et al. data into a user cache.

The files come from one commit of a public GitHub repository (see the data's SOURCE.md), so
what a run reads can be checked byte for byte against the SHA-256 sums published there. A
file that fails the check is reported and never used.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mcu_exp.data.types import DatasetError
from mcu_exp.user_cache import user_cache

log = logging.getLogger(__name__)

REPOSITORY = "sea-lab-wm/warning-comprehensibility"
COMMIT = "588ce0fe63d3daeca97e684bd45b59995cc0cbe3"
DEFAULT_BASE_URL = f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}/"
BASE_URL_ENV = "MCU_EXP_SCALABRINO_URL"
"""Environment variable that replaces :data:`DEFAULT_BASE_URL` (a mirror, a test server)."""

EVALUATIONS_PATH = "feature_extraction/src/main/resources/study_data/understandability_with_targets.csv"
SNIPPETS_PATH = "feature_extraction/src/main/resources/corrected_raw_snippets/ds_6"
EVALUATIONS_FILE = "evaluations.csv"
SNIPPETS_DIR = "snippets"

EVALUATIONS_SHA256 = "6ed647f65de97450464047fb8035771aaeea42f0abac3ccff17efd3c3d32c1f4"
SNIPPETS_SHA256 = "3b0b31928f5295efd8007e727b99c30cbb11c471f83e43a7335f24f7ac272fc1"
"""SHA-256 of the 50 snippet files concatenated in C-locale name order."""

SNIPPET_FILES: tuple[str, ...] = (
    "ds_6_snip_1$Antlr4Master_analyze.java",
    "ds_6_snip_1$CarReport_save.java",
    "ds_6_snip_1$CheckEstimator_printAttributeSummary.java",
    "ds_6_snip_1$ClassifierPerformanceEvaluatorCustomizer_addButtons.java",
    "ds_6_snip_1$EstimatorUtils_getMinMax.java",
    "ds_6_snip_1$GeneratorPropertyIteratorPanel_actionPerformed.java",
    "ds_6_snip_1$HibernateORM_getOverriddenColumn.java",
    "ds_6_snip_1$K9_testFetchResponse.java",
    "ds_6_snip_1$ModelPerformanceChart_performRequest.java",
    "ds_6_snip_1$MyExpenses_contribFeatureCalled.java",
    "ds_6_snip_1$OpenCMSCore_createContextMenu.java",
    "ds_6_snip_1$Phoenix_doDropSchema.java",
    "ds_6_snip_1$Pom_HealthReport.java",
    "ds_6_snip_1$SpringBatch_testFailureAndRecovery.java",
    "ds_6_snip_2$Antlr4Master_process.java",
    "ds_6_snip_2$CarReport_onCreate.java",
    "ds_6_snip_2$HibernateORM_TimesTenDialect.java",
    "ds_6_snip_2$K9_getInstance.java",
    "ds_6_snip_2$MyExpenses_getContentProviderOperationsForCreate.java",
    "ds_6_snip_2$OpenCMSCore_seekFile.java",
    "ds_6_snip_2$Phoenix_evaluate.java",
    "ds_6_snip_2$Pom__getRuns.java",
    "ds_6_snip_2$SpringBatch_testArtifactUniqueness.java",
    "ds_6_snip_3$Antlr4Master_hasSLLConflictTerminatingPrediction.java",
    "ds_6_snip_3$CarReport_handleFABClick.java",
    "ds_6_snip_3$HibernateORM_execute.java",
    "ds_6_snip_3$K9_open_withXoauth2Extension_shouldThrowOnMultipleFailure.java",
    "ds_6_snip_3$MyExpenses_mergeUpdate.java",
    "ds_6_snip_3$OpenCMSCore_execute.java",
    "ds_6_snip_3$Phoenix_configure.java",
    "ds_6_snip_3$Pom_get.java",
    "ds_6_snip_3$SpringBatch_testOperationWithDirectCloseCall.java",
    "ds_6_snip_4$Antlr4Master_removeFast.java",
    "ds_6_snip_4$CarReport_showFullScreenChart.java",
    "ds_6_snip_4$HibernateORM_extractSequenceValue.java",
    "ds_6_snip_4$K9_StorageManager.java",
    "ds_6_snip_4$MyExpenses_processChar.java",
    "ds_6_snip_4$OpenCMSCore_generateContent.java",
    "ds_6_snip_4$Phoenix_process.java",
    "ds_6_snip_4$Pom_limit.java",
    "ds_6_snip_4$SpringBatch_testCustomRecordSeparatorMultilineBlankLineAfterEnd.java",
    "ds_6_snip_5$Antlr4Master_testToStringStartStop2.java",
    "ds_6_snip_5$CarReport_downloadFile.java",
    "ds_6_snip_5$HibernateORM_collectionInfoString.java",
    "ds_6_snip_5$K9_testTextQuoteToHtmlBlockquote.java",
    "ds_6_snip_5$MyExpenses_updateOrClearHeader.java",
    "ds_6_snip_5$OpenCMSCore_buttonHtml.java",
    "ds_6_snip_5$Phoenix_parseOptions.java",
    "ds_6_snip_5$Pom_loadClass.java",
    "ds_6_snip_5$SpringBatch_initWriterForSimpleCallbackTests.java",
)


def base_url(override: str | None = None) -> str:
    """The repository root URL: ``override``, else ``$MCU_EXP_SCALABRINO_URL``, else GitHub."""
    url = override or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    return url if url.endswith("/") else url + "/"


def cache_root(name: str = "scalabrino") -> Path:
    """The user cache folder for dataset ``name``: ``data/<name>`` under :func:`user_cache`, so
    a dataset found once is found again from any working directory."""
    return user_cache() / "data" / name


def file_urls(url: str | None = None) -> dict[str, str]:
    """Map each local relative path to the raw URL it comes from (``$`` encoded as ``%24``)."""
    root = base_url(url)
    urls = {EVALUATIONS_FILE: root + EVALUATIONS_PATH}
    for name in SNIPPET_FILES:
        urls[f"{SNIPPETS_DIR}/{name}"] = f"{root}{SNIPPETS_PATH}/{urllib.parse.quote(name)}"
    return urls


def sha256_of(paths: list[Path]) -> str:
    """SHA-256 of the files' bytes concatenated in the given order."""
    digest = hashlib.sha256()
    for path in paths:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 16), b""):
                digest.update(block)
    return digest.hexdigest()


def checksum_problems(root: Path) -> list[tuple[str, str]]:
    """``(relative path, what is wrong)`` for each pinned file in ``root`` that fails its check.

    Empty when everything verifies. The snippets are checked together (one published sum over
    the 50 files concatenated in C-locale name order), so their entry names the folder.
    """
    problems: list[tuple[str, str]] = []
    evaluations = root / EVALUATIONS_FILE
    if not evaluations.is_file():
        problems.append((EVALUATIONS_FILE, "missing"))
    else:
        got = sha256_of([evaluations])
        if got != EVALUATIONS_SHA256:
            problems.append((EVALUATIONS_FILE, f"sha256 {got}, expected {EVALUATIONS_SHA256}"))
    names = sorted(SNIPPET_FILES, key=str.encode)
    absent = [n for n in names if not (root / SNIPPETS_DIR / n).is_file()]
    if absent:
        problems.append((f"{SNIPPETS_DIR}/{absent[0]}", f"missing ({len(absent)} snippets absent)"))
    else:
        got = sha256_of([root / SNIPPETS_DIR / n for n in names])
        if got != SNIPPETS_SHA256:
            problems.append(
                (
                    f"{SNIPPETS_DIR}/*.java",
                    f"sha256 of the {len(names)} files concatenated is {got}, expected {SNIPPETS_SHA256}",
                )
            )
    return problems


def is_verified(root: Path) -> bool:
    """True when ``root`` holds every pinned file with the published checksums."""
    return root.is_dir() and not checksum_problems(root)


def fetch(url: str, dest: Path, timeout: float) -> None:
    """Save ``url`` at ``dest``; a one-line :class:`DatasetError` naming the URL on failure."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, dest.open("wb") as out:
            shutil.copyfileobj(response, out)
    except urllib.error.HTTPError as err:
        raise DatasetError(f"downloading {url} failed: HTTP {err.code} {err.reason}") from err
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise DatasetError(
            f"downloading {url} failed: {reason} (offline? point MCU_EXP_DATA or "
            "dataset.root at a local copy of the data)"
        ) from err


def download(dest: Path | None = None, url: str | None = None, timeout: float = 60.0) -> Path:
    """Fetch the pinned files into ``dest`` (default :func:`cache_root`) and verify them.

    Files land in a temporary sibling folder that is renamed onto ``dest`` only after every
    checksum matches, so ``dest`` never holds a partial or corrupted copy; on any failure the
    temporary folder is removed and a :class:`DatasetError` names the file at fault.
    """
    dest = Path(dest) if dest is not None else cache_root()
    dest.parent.mkdir(parents=True, exist_ok=True)
    urls = file_urls(url)
    log.info("downloading Scalabrino data (%d files) from %s into %s", len(urls), base_url(url), dest)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", suffix=".partial", dir=dest.parent))
    try:
        (tmp / SNIPPETS_DIR).mkdir()
        for relative, file_url in urls.items():
            fetch(file_url, tmp / relative, timeout)
        problems = checksum_problems(tmp)
        if problems:
            relative, detail = problems[0]
            source = urls.get(relative, f"{base_url(url)}{SNIPPETS_PATH}/")
            raise DatasetError(f"downloaded {relative} ({source}) fails verification: {detail}; nothing was cached")
        install(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def install(tmp: Path, dest: Path, verified: Callable[[Path], bool] = is_verified) -> None:
    """Move a verified folder onto ``dest``, replacing one ``verified`` refuses; tolerate a racer."""
    if dest.exists() and not verified(dest):
        stale = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", suffix=".stale", dir=dest.parent))
        os.rename(dest, stale / dest.name)
        shutil.rmtree(stale, ignore_errors=True)
    try:
        os.rename(tmp, dest)
    except OSError:
        if not verified(dest):  # another process installed something unusable meanwhile
            raise


DATA_ENV = "MCU_EXP_DATA"
"""Environment variable naming a folder that holds one subfolder per dataset."""


def resolve_folder(
    cfg: Any,
    name: str,
    verified: Callable[[Path], bool],
    fetch_into: Callable[[Path], Path],
    files: Sequence[str] = (),
    label: str | None = None,
) -> tuple[Path, str]:
    """The folder of dataset ``name`` and how it was found: ``dataset.root``;
    ``$MCU_EXP_DATA/<name>``; the user cache when ``verified``; else ``fetch_into(cache)`` when
    ``dataset.download`` allows it (a one-line :class:`DatasetError` when it does not). A folder
    found through ``dataset.root`` or ``$MCU_EXP_DATA`` that passes ``verified`` has its pinned
    ``files`` copied into the user cache (:func:`keep_in_cache`), so the next run finds the data
    from any directory without either."""
    root = getattr(cfg, "root", None)
    if root:
        folder = Path(root).expanduser()
        return folder, "dataset.root" + keep_in_cache(folder, name, verified, files)
    env = os.environ.get(DATA_ENV)
    if env:
        folder = Path(env).expanduser() / name
        return folder, f"${DATA_ENV}" + keep_in_cache(folder, name, verified, files)
    cache = cache_root(name)
    if verified(cache):
        return cache, "user cache, sha256 verified"
    if not getattr(cfg, "download", True):
        state = "fails verification" if cache.exists() else "is empty"
        raise DatasetError(
            f"{label or name} data not found: dataset.root is unset, ${DATA_ENV} is unset and the "
            f"cache {cache} {state}; set one of them or allow dataset.download=true"
        )
    return fetch_into(cache), "downloaded, sha256 verified"


def keep_in_cache(source: Path, name: str, verified: Callable[[Path], bool], files: Sequence[str]) -> str:
    """Copy ``files`` (paths relative to ``source``) into the user cache of dataset ``name``
    when the cache does not already hold a verified copy and ``source`` passes ``verified``: into
    a temporary sibling, checked again, then renamed into place, so the cache never holds a
    partial copy. A note for the dataset's source ("; kept in the user cache …") when it
    copied, else empty; a cache that cannot be written is a warning, never the job's failure."""
    if not files:
        return ""
    cache = cache_root(name)
    try:
        if verified(cache) or not verified(source):
            return ""
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{cache.name}-", suffix=".partial", dir=cache.parent))
        try:
            for relative in files:
                (tmp / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source / relative, tmp / relative)
            if not verified(tmp):  # the source changed while it was copied
                return ""
            install(tmp, cache, verified)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError as err:
        log.warning("the %s data was not kept in the user cache %s: %s", name, cache, err)
        return ""
    log.info("kept a sha256-verified copy of the %s data in %s", name, cache)
    return f"; kept in the user cache {cache}"


def download_verified(
    dest: Path,
    urls: dict[str, str],
    problems: Callable[[Path], list[tuple[str, str]]],
    timeout: float = 60.0,
    derive: Callable[[Path], None] | None = None,
) -> Path:
    """Fetch ``urls`` (local relative path → URL) into a temporary sibling of ``dest``, run
    ``derive`` on it (e.g. read a database into CSV files), check it with ``problems`` and only
    then rename it onto ``dest``; on any failure nothing is cached and a one-line
    :class:`DatasetError` names the file at fault."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    log.info("downloading %d file(s) into %s", len(urls), dest)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", suffix=".partial", dir=dest.parent))
    try:
        for relative, file_url in urls.items():
            (tmp / relative).parent.mkdir(parents=True, exist_ok=True)
            fetch(file_url, tmp / relative, timeout)
        if derive is not None:
            derive(tmp)
        found = problems(tmp)
        if found:
            relative, detail = found[0]
            source = urls.get(relative, "derived from the download")
            raise DatasetError(f"downloaded {relative} ({source}) fails verification: {detail}; nothing was cached")
        install(tmp, dest, lambda path: path.is_dir() and not problems(path))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def file_problems(root: Path, sums: dict[str, str]) -> list[tuple[str, str]]:
    """``(relative path, what is wrong)`` for each file of ``sums`` missing or not matching its sha256."""
    found: list[tuple[str, str]] = []
    for relative, expected in sums.items():
        path = root / relative
        if not path.is_file():
            found.append((relative, "missing"))
            continue
        got = sha256_of([path])
        if got != expected:
            found.append((relative, f"sha256 {got}, expected {expected}"))
    return found
