"""Loader for the STAKE lab naturalness-vs-understandability replication (49 Java methods, 396 evaluations).

Where the files come from (first that applies): ``dataset.root``; ``$MCU_EXP_DATA/stakelab``;
the user cache when its files verify; a pinned, checksummed download into that cache (the
repository has no licence file: the data is downloaded, never redistributed).

One row of ``dataset.csv`` is one developer's evaluation of one method: ``correctness`` is the
share of three multiple-choice questions answered right (``correct`` = 3 × that, ``total`` 3,
so ABU50 is correctness ≥ 2/3), ``understood`` the perceived understanding, ``occupation`` the
reader group. A method's ``title`` (its signature) is matched to the one snippet file whose name
holds ``_<Class>_`` and whose text declares the method; a tie is broken by the parameter count.
The program id is the snippet's file stem, as ``snippets/questions.txt`` names it. The 21
snippets nobody evaluated are left out of the programs and counted in a :class:`DatasetWarning`,
with the methods that have a single evaluation (no split half for them).
"""

from __future__ import annotations

import io
import os
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

import mcu_exp.data.download as dl
from mcu_exp.data.code_metrics import DATASET_METRICS_KEY
from mcu_exp.data.files import read_text
from mcu_exp.data.types import Dataset, DatasetError, DatasetWarning, Program, Question, evaluations_frame

NAME = "stakelab"
REPOSITORY = "stakelab/replication-naturalness-understandability"
COMMIT = "f00ddec3b9628ea085337f9749e5f3f045ed17a2"
DEFAULT_BASE_URL = f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}/"
BASE_URL_ENV = "MCU_EXP_STAKELAB_URL"
"""Environment variable that replaces :data:`DEFAULT_BASE_URL` (a mirror, a test server)."""
EVALUATIONS_FILE = "dataset.csv"
QUESTIONS_FILE = "snippets/questions.txt"
SNIPPETS_DIR = "snippets"
SHA256 = {
    EVALUATIONS_FILE: "4e3d4a6f357f22831a788e35f34a1c0f465b69cf1ac65f671f93fb64e876d36f",
    QUESTIONS_FILE: "51433d52fe4d16db3bc4effdd02adc88b186f72cb5b270c2848ef987e0708fec",
}
SNIPPETS_SHA256 = "c5e182b895f4c7c6dcfe2a24b51538b1e203f20fb01d20946174ed0ab7d95668"
"""SHA-256 of the 70 snippet files concatenated in C-locale name order."""
QUESTIONS_PER_EVALUATION = 3
OCCUPATION_GROUPS = {
    "Bachelor student": "bachelor",
    "Master student": "master",
    "PHD student": "phd",
    "Industrial developer": "professional",
}
REQUIRED_COLUMNS = ("developer", "occupation", "title", "system_name", "correctness", "understood")
PROGRAM_METRICS = ("naturalness",)
"""Per-method columns kept as dataset metrics (n-gram naturalness: a model's measure, not a human one)."""
SNIPPET_FILES: tuple[str, ...] = (
    "HanLP-master_CoreBiGramTableDictionary_3.java",
    "HikariCP-dev_MockDataSource_10.java",
    "HikariCP-dev_PoolBase_13.java",
    "Hystrix-master_FallbackMethod_16.java",
    "Hystrix-master_FallbackMethod_7.java",
    "OpenRefine-master_GetScatterplotCommand_1.java",
    "OpenRefine-master_ImportProjectCommand_1.java",
    "OpenRefine-master_ReconJudgeSimilarCellsCommand_1.java",
    "OpenRefine-master_TransposeColumnsIntoRowsCommand_1.java",
    "VasSonic-master_SonicUtils_9.java",
    "android-async-http-master_AsyncHttpClient_4.java",
    "bazel-master_AndroidResourceOutputs_6.java",
    "bazel-master_AndroidResourceProcessor_1.java",
    "bazel-master_AppleConfiguration_10.java",
    "bazel-master_SkylarkSemanticsOptions_1.java",
    "bytecode-viewer-master_Scalr_3.java",
    "disruptor-master_FizzBuzzQueueProcessor_4.java",
    "druid-master_CaseKylin_mysql_5.java",
    "druid-master_DruidConnectionHolder_27.java",
    "druid-master_DruidPooledPreparedStatement_12.java",
    "druid-master_OracleValidConnectionChecker_3.java",
    "druid-master_Oracle_Case4_7.java",
    "druid-master_ResourceServlet_5.java",
    "druid-master_WallTableStat_22.java",
    "elasticsearch-master_DatafeedConfigProviderIT_4.java",
    "elasticsearch-master_GeoDistanceIT_3.java",
    "elasticsearch-master_JobConfigProviderIT_5.java",
    "elasticsearch-master_XPackRestIT_7.java",
    "fastjson-master_JavaBeanInfo_8.java",
    "graal-master_Inflation_11.java",
    "graal-master_MonitorSupport_10.java",
    "gson-master_$Gson$Types_6.java",
    "guava-master_TypeToken_19.java",
    "guice-master_GuiceFilter_3.java",
    "guice-master_ManagedServletPipeline_6.java",
    "guice-master_MoreTypes_6.java",
    "guice-master_SingleMethodInjector_1.java",
    "hadoop-trunk_CallQueueManager_4.java",
    "hadoop-trunk_DBInputFormat_9.java",
    "hadoop-trunk_HamletGen_8.java",
    "hadoop-trunk_MiniKdc_1.java",
    "hadoop-trunk_MountTableResolver_8.java",
    "hadoop-trunk_NMClientAsyncImpl_3.java",
    "hadoop-trunk_NativeIO_7.java",
    "hadoop-trunk_OzoneAddress_1.java",
    "hadoop-trunk_S3xLoginHelper_6.java",
    "hadoop-trunk_TimelineReaderWebServices_25.java",
    "hadoop-trunk_TimelineReaderWebServices_8.java",
    "hadoop-trunk_WhoClient_1.java",
    "incubator-druid-master_LocalDataSegmentKiller_1.java",
    "incubator-druid-master_RedirectFilter_2.java",
    "incubator-druid-master_SQLMetadataSegmentManager_1.java",
    "jadx-master_AboutDialog_1.java",
    "jadx-master_TextStandardActions_1.java",
    "jenkins-master_JSF_1.java",
    "jfreechart-master_LCBLayout_2.java",
    "jfreechart-master_MarkerAxisBand_4.java",
    "jfreechart-master_PeriodAxis_35.java",
    "jfreechart-master_TextTitle_25.java",
    "libgdx-master_GradientPanel_2.java",
    "netty-4.1_TypeParameterMatcher_3.java",
    "retrofit-master_Utils_5.java",
    "selenium-master_SimplePropertyDescriptor_4.java",
    "spring-framework-master_DispatcherServlet_24.java",
    "spring-framework-master_MultipartFilter_3.java",
    "spring-framework-master_RequestMappingHandlerAdapter_40.java",
    "spring-framework-master_SerializableTypeWrapper_4.java",
    "spring-framework-master_UriComponentsBuilder_17.java",
    "symphony-master_UserQueryService_7.java",
    "vert.x-master_SSLHelper_10.java",
)


def base_url(override: str | None = None) -> str:
    """The repository root URL: ``override``, else ``$MCU_EXP_STAKELAB_URL``, else GitHub."""
    url = override or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    return url if url.endswith("/") else url + "/"


def file_urls(url: str | None = None) -> dict[str, str]:
    """Each local relative path and the raw URL it comes from (the layout is the repository's)."""
    root = base_url(url)
    names = (EVALUATIONS_FILE, QUESTIONS_FILE, *(f"{SNIPPETS_DIR}/{n}" for n in SNIPPET_FILES))
    return {name: root + name for name in names}


def checksum_problems(root: Path) -> list[tuple[str, str]]:
    """``(relative path, what is wrong)`` for each pinned file failing its check (empty: verified).
    The snippets are checked together (one sum over the 70 files in C-locale name order)."""
    problems = dl.file_problems(root, SHA256)
    names = sorted(SNIPPET_FILES, key=str.encode)
    absent = [n for n in names if not (root / SNIPPETS_DIR / n).is_file()]
    if absent:
        problems.append((f"{SNIPPETS_DIR}/{absent[0]}", f"missing ({len(absent)} snippets absent)"))
    else:
        got = dl.sha256_of([root / SNIPPETS_DIR / n for n in names])
        if got != SNIPPETS_SHA256:
            detail = f"sha256 of the {len(names)} files concatenated is {got}, expected {SNIPPETS_SHA256}"
            problems.append((f"{SNIPPETS_DIR}/*.java", detail))
    return problems


def is_verified(root: Path) -> bool:
    """True when ``root`` holds every pinned file with the published checksums."""
    return root.is_dir() and not checksum_problems(root)


def download(dest: Path | None = None, url: str | None = None, timeout: float = 60.0) -> Path:
    """Fetch the pinned files into ``dest`` (default: the user cache) and verify them."""
    dest = Path(dest) if dest is not None else dl.cache_root(NAME)
    return dl.download_verified(dest, file_urls(url), checksum_problems, timeout)


def resolve_root(cfg: Any, url: str | None = None) -> tuple[Path, str]:
    """The data folder and how it was found (see the module docstring)."""
    return dl.resolve_folder(
        cfg, NAME, is_verified, lambda cache: download(cache, url=url), files=tuple(file_urls(url))
    )


def parameter_count(text: str, start: int) -> int:
    """Parameters of the list whose ``(`` is at ``text[start]``: top-level commas + 1 (0 if empty)."""
    depth, commas, i = 0, 0, start
    for i in range(start, len(text)):
        char = text[i]
        if char in "(<[":
            depth += 1
        elif char in ")>]":
            depth -= 1
            if depth == 0:
                break
        elif char == "," and depth == 1:
            commas += 1
    return commas + 1 if text[start + 1 : i].strip() else 0


def match_snippet(title: str, snippets: dict[str, str], where: str) -> str:
    """The stem of the one snippet declaring the method ``title`` names (see the module docstring)."""
    head, _, params = title.partition("(")
    parts = head.split(".")
    if len(parts) < 2 or not params.endswith(")"):
        raise DatasetError(f"{where}: title {title!r} is not of the form 'package.Class.method(types)'")
    cls, method = parts[-2], parts[-1]
    wanted = parameter_count("(" + params, 0)
    declares = re.compile(rf"(?<![\w$.]){re.escape(method)}\s*\(")
    found: dict[str, list[int]] = {}
    for stem, code in snippets.items():
        if f"_{cls}_" in stem:
            counts = [parameter_count(code, m.end() - 1) for m in declares.finditer(code)]
            if counts:
                found[stem] = counts
    if len(found) > 1:
        found = {stem: counts for stem, counts in found.items() if wanted in counts}
    if len(found) != 1:
        raise DatasetError(
            f"{where}: title {title!r} should match exactly one snippet '*_{cls}_*.java' declaring "
            f"{method}({wanted} parameters), found {len(found)}: {sorted(found)}"
        )
    return next(iter(found))


def read_questions(path: Path, keep: set[str]) -> list[Question]:
    """The keyless multiple-choice questions of the programs in ``keep``: a snippet stem line,
    then each question indented by one tab and its options by two (no correct option given)."""
    questions: list[Question] = []
    program: str | None = None
    current: tuple[int, str, list[str]] | None = None

    def close() -> None:
        if current is not None and program in keep:
            line, text, options = current
            number = sum(q.program_id == program for q in questions) + 1
            questions.append(Question(str(program), f"q{number}", text, tuple(options), None, f"{path}:{line}"))

    for number, raw in enumerate(read_text(path).splitlines(), start=1):
        if not raw.strip():
            continue
        if not raw.startswith("\t"):
            close()
            program, current = raw.strip(), None
        elif raw.startswith("\t\t"):
            if current is None:
                raise DatasetError(f"{path}:{number}: an option (two tabs) before any question (one tab)")
            current[2].append(raw.strip())
        else:
            close()
            current = (number, raw.strip(), [])
    close()
    heads = [line.strip() for line in read_text(path).splitlines() if line.strip() and not line.startswith("\t")]
    repeated = sorted({h for h in heads if heads.count(h) > 1} & keep)
    without = sorted(keep - {q.program_id for q in questions} - set(repeated))
    if repeated or without:
        warnings.warn(
            f"{path}: {len(repeated)} snippet(s) head two question blocks, their questions are left out "
            f"({repeated}); {len(repeated) + len(without)} evaluated snippet(s) have no questions "
            f"({sorted([*repeated, *without])})",
            DatasetWarning,
            stacklevel=3,
        )
    return [q for q in questions if q.program_id not in repeated]


def _thirds(column: pd.Series) -> pd.Series:
    """Whether each value is 0, 1/3, 2/3 or 1 (as the CSV writes them, to 15 digits)."""
    thirds = pd.to_numeric(column, errors="coerce") * QUESTIONS_PER_EVALUATION
    return ((thirds - thirds.round()).abs() < 1e-6) & thirds.between(0, QUESTIONS_PER_EVALUATION)


def _rows(csv_path: Path) -> pd.DataFrame:
    try:
        frame = pd.read_csv(io.StringIO(read_text(csv_path)), dtype={"developer": str, "title": str})
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise DatasetError(f"{csv_path}: cannot parse as CSV: {' '.join(str(err).split())}") from err
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise DatasetError(f"{csv_path}:1: missing columns {missing}")
    if frame.empty:
        raise DatasetError(f"{csv_path}: no evaluations after the header, expected at least one row")
    checks: dict[str, Callable[[pd.Series], pd.Series]] = {
        "correctness": _thirds,
        "understood": lambda s: pd.to_numeric(s, errors="coerce").isin([0, 1]),
        "occupation": lambda s: s.isin(list(OCCUPATION_GROUPS)),
        "developer": lambda s: s.notna(),
        "title": lambda s: s.notna(),
    }
    expected = {
        "correctness": "one of 0, 1/3, 2/3, 1",
        "understood": "0 or 1",
        "occupation": f"one of {list(OCCUPATION_GROUPS)}",
        "developer": "a developer id",
        "title": "a method signature",
    }
    for column, ok in checks.items():
        bad = ~ok(frame[column]).fillna(False).astype(bool)
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            value = frame[column].iloc[row]
            raise DatasetError(f"{csv_path}:{row + 2}: column {column} is '{value}', expected {expected[column]}")
    return frame


def read_stakelab(root: Path, name: str = NAME, source: str = "") -> Dataset:
    """Load ``root/dataset.csv``, ``root/snippets/`` and its questions into a :class:`Dataset`."""
    csv_path, snippets = root / EVALUATIONS_FILE, root / SNIPPETS_DIR
    for needed in (csv_path, snippets):
        if not needed.exists():
            raise DatasetError(f"{needed}: missing (expected the STAKE lab data in {root})")
    frame = _rows(csv_path)
    code = {p.stem: read_text(p) for p in sorted(snippets.glob("*.java"))}
    stems: dict[str, str] = {}
    for index in (~frame["title"].duplicated()).to_numpy().nonzero()[0].tolist():
        title = frame["title"].iloc[index]
        stems[title] = match_snippet(title, code, f"{csv_path}:{index + 2}")
    program_ids = frame["title"].map(stems)
    twice = {s: [t for t, v in stems.items() if v == s] for s in set(stems.values())}
    shared = next((titles for titles in twice.values() if len(titles) > 1), None)
    if shared:
        raise DatasetError(f"{csv_path}: titles {shared} match the same snippet {stems[shared[0]]}.java")
    programs = []
    for title, stem in stems.items():
        first = frame[frame["title"] == title].iloc[0]
        metrics = {c: float(first[c]) for c in PROGRAM_METRICS if c in frame.columns and pd.notna(first[c])}
        meta = {"title": title, "system_name": first["system_name"], "snippet_file": f"{stem}.java"}
        if "topic" in frame.columns:
            meta["topic"] = first["topic"]
        programs.append(
            Program(id=stem, language="java", code=code[stem].strip("\n"), meta={**meta, DATASET_METRICS_KEY: metrics})
        )
    counts = program_ids.value_counts()
    unevaluated = sorted(set(code) - set(stems.values()))
    single = int((counts == 1).sum())
    if unevaluated or single:
        warnings.warn(
            f"{csv_path}: {len(unevaluated)} of the {len(code)} snippets were never evaluated (left out "
            f"of the programs, e.g. {unevaluated[:2]}); {single} of the {len(stems)} methods have a "
            "single evaluation (no split half for them)",
            DatasetWarning,
            stacklevel=2,
        )
    correct = (pd.to_numeric(frame["correctness"]) * QUESTIONS_PER_EVALUATION).round().astype(int)
    evaluations = evaluations_frame(
        program_id=program_ids.tolist(),
        participant_id=frame["developer"].str.strip().tolist(),
        correct=correct.tolist(),
        total=[QUESTIONS_PER_EVALUATION] * len(frame),
        perceived=pd.to_numeric(frame["understood"]).astype(int).astype(bool).tolist(),
        group=frame["occupation"].map(OCCUPATION_GROUPS).tolist(),
    )
    questions = read_questions(root / QUESTIONS_FILE, set(stems.values())) if (root / QUESTIONS_FILE).is_file() else []
    return Dataset(
        name=name,
        programs=programs,
        evaluations=evaluations,
        questions=questions,
        source=f"{root} ({source})" if source else str(root),
        evaluations_file=str(csv_path),
    )


def load_stakelab(cfg: Any, url: str | None = None) -> Dataset:
    """Resolve the data folder from ``cfg`` (see :func:`resolve_root`) and load it."""
    root, how = resolve_root(cfg, url)
    return read_stakelab(root, name=getattr(cfg, "name", None) or NAME, source=how)
