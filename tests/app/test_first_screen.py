"""The first screen of `mcu-exp`: a misspelled key is one line with a suggestion, `--help` lists
the subcommands, loading a model (or the scorer's encoder) is its own step before any progress
bar starts, scoring has bars, log lines and warnings print above bars, libraries stay quiet."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from mcu_exp import app, console
from mcu_exp.config import suggest as keys_module

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def library_settings() -> Any:
    """What quieting libraries changes in this process (logger levels, transformers' bars,
    MLFLOW_LOGGING_LEVEL), put back after each test."""
    mlflow_level = os.environ.get("MLFLOW_LOGGING_LEVEL")
    levels = {name: logging.getLogger(name).level for name in console.QUIET_LEVELS}
    bars = None
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        bars = hf_logging.is_progress_bar_enabled()
    yield
    if mlflow_level is None:
        os.environ.pop("MLFLOW_LOGGING_LEVEL", None)
    else:
        os.environ["MLFLOW_LOGGING_LEVEL"] = mlflow_level
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    if bars:
        from transformers.utils import logging as hf_logging

        hf_logging.enable_progress_bar()


def mcu_exp(*args: str, outputs: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command in a subprocess; ``outputs``: its outputs folder (composition errors come
    before any run, so no MLflow store is seeded)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("HYDRA_FULL_ERROR", None)
    if outputs is not None:
        env["MCU_EXP_OUTPUTS"] = str(outputs)
        env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.run(
        [sys.executable, "-m", "mcu_exp", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "args,expected",
    [
        (("decision.epsilom=0.1",), "unknown config key decision.epsilom: did you mean decision.epsilon?"),
        (("proxy.kk=3",), "unknown config key proxy.kk: did you mean proxy.k?"),
        (("-m", "decision.epsilom=0.1,0.2"), "unknown config key decision.epsilom: did you mean decision.epsilon?"),
    ],
    ids=["run", "untyped-proxy-section", "multirun"],
)
def test_misspelled_key_is_one_line_with_a_suggestion(tmp_path: Path, args: tuple[str, ...], expected: str) -> None:
    res = mcu_exp(*args, outputs=tmp_path)
    assert res.returncode == 1
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert lines == [f"mcu-exp: error: {expected}"], res.stderr
    both = res.stdout + res.stderr
    assert "+decision" not in both and "+proxy" not in both  # never Hydra's hint to add the key
    assert "Traceback" not in both and "HYDRA_FULL_ERROR" not in both
    assert list(tmp_path.iterdir()) == []  # a sweep's too: no MLflow store, parent run or sweep folder


@pytest.mark.parametrize(
    "args,expected",
    [
        (("model=gpt4o",), "mcu-exp: error: unknown model 'gpt4o': did you mean gpt-4o? (options: claude-opus-4-1, "),
        (("model=no-such-model",), "mcu-exp: error: unknown model 'no-such-model' (options: claude-opus-4-1, "),
        (("decision.epsilon=abc",), "mcu-exp: error: decision.epsilon expects a number, got 'abc'"),
    ],
    ids=["close-option", "no-close-option", "wrong-type"],
)
def test_a_missing_option_or_a_wrong_type_is_one_line(tmp_path: Path, args: tuple[str, ...], expected: str) -> None:
    res = mcu_exp(*args, outputs=tmp_path)
    assert res.returncode == 1
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(expected), res.stderr
    assert "Traceback" not in res.stderr and "HYDRA_FULL_ERROR" not in res.stderr


@pytest.mark.parametrize(
    "args,expected",
    [
        (
            ("-m", "decision.epsilon=0.1,0.2,1.5", "evaluation.confidence=0.9,0.95"),
            "decision.epsilon=1.5: expected a value in (0, 1) "
            "(found in the sweep's job decision.epsilon=1.5 evaluation.confidence=0.9; no job was started)",
        ),
        (
            ("-m", "decision.epsilon=0.1,0.2", "evaluation.confidence=1.5"),
            "evaluation.confidence=1.5: expected a value in (0, 1) "
            "(found in the sweep's job decision.epsilon=0.1; no job was started)",
        ),
    ],
    ids=["in-a-later-job", "in-every-job"],
)
def test_a_value_out_of_range_in_any_job_of_a_sweep_stops_it_before_the_store(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    """Each swept value is checked before the sweep's MLflow store, parent run or first job:
    a value out of range in the third job no longer fails after two jobs have run."""
    res = mcu_exp(*args, outputs=tmp_path)
    assert res.returncode == 1
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert lines == [f"mcu-exp: error: {expected}"], res.stderr
    assert list(tmp_path.iterdir()) == []


def test_other_composition_errors_keep_hydras_report(tmp_path: Path) -> None:
    res = mcu_exp("decision.epsilon=0.1=2", outputs=tmp_path)  # not an override Hydra can parse
    assert res.returncode == 1
    assert "mcu-exp: error:" not in res.stderr and "HYDRA_FULL_ERROR" in res.stderr
    assert "Traceback" not in res.stderr


def test_help_lists_the_subcommands_and_hydras_help() -> None:
    res = mcu_exp("--help")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    for name in app.SUBCOMMANDS:
        (line,) = [x for x in lines if x.strip().startswith(f"mcu-exp {name} ")]
        assert len(line.split()) > 3, line  # a description follows the name
    assert "== Configuration groups ==" in res.stdout and "decision: conformal" in res.stdout
    assert "epsilon: 0.1" in res.stdout  # the composed config
    assert "is powered by Hydra" not in res.stdout


@pytest.mark.parametrize(
    "key,expected",
    [
        ("decision.epsilom", "decision.epsilon"),
        ("proxy.kk", "proxy.k"),
        ("proxy.k_cl", "proxy.k_cal"),
        ("decison.epsilon", "decision.epsilon"),
        ("epsilon", "decision.epsilon"),
        ("hydra.job.chdirr", "hydra.job.chdir"),
        ("completely.unrelated", None),
        ("chdir", None),  # hydra.* keys are suggested only for keys under hydra
    ],
)
def test_suggest_key(key: str, expected: str | None) -> None:
    keys = [
        "hydra",
        "hydra.job",
        "hydra.job.chdir",
        "decision",
        "decision.epsilon",
        "decision.theta",
        "proxy",
        "proxy.k",
        "proxy.k_cal",
        "model",
        "model.temperature",
    ]
    assert keys_module.suggest_key(key, keys) == expected


def test_config_keys_walks_nested_mappings_without_resolving() -> None:
    cfg = OmegaConf.create({"a": {"b": 1, "c": {"d": "${missing}"}}, "e": [1, {"f": 2}]})
    assert keys_module.config_keys(cfg) == ["a", "a.b", "a.c", "a.c.d", "e"]


class _FakeBackend:
    """Loads lazily in ``stream`` like the local backend, unless ``load`` ran first."""

    name = "fake"

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.loaded = False

    def identity(self) -> dict[str, Any]:
        return {"backend": "fake"}

    def load(self) -> None:
        if not self.loaded:
            self.events.append("load")
            self.loaded = True

    def stream(self, jobs: Any) -> Any:
        from mcu_exp.llm.contract import Sample

        self.load()
        for position, job in enumerate(jobs):
            for index in job.indices:
                yield position, index, Sample(f"text {index}", "stop", 1, 2)


def test_generate_bar_starts_after_the_model_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcu_exp.llm import generator
    from mcu_exp.llm.contract import GenerationRequest, Message

    events: list[str] = []
    real_tqdm = generator.tqdm

    def recording_tqdm(*args: Any, **kwargs: Any) -> Any:
        events.append(f"bar {kwargs.get('desc')}")
        return real_tqdm(*args, **kwargs)

    monkeypatch.setattr(generator, "tqdm", recording_tqdm)
    gen = generator.CachedGenerator(None, tmp_path, progress=False, backend=_FakeBackend(events))
    try:
        results = gen.generate([GenerationRequest((Message("user", "hi"),), n=3)])
    finally:
        gen.close()
    assert [len(r.samples) for r in results] == [3]
    assert events == ["load", "bar generate"]


@pytest.fixture(scope="module")
def micro_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer random Llama with a 9-word tokenizer: saved and loaded in about a second
    (``tiny_llama`` reads SmolLM2's GGUF tokenizer, ~20 s, for tests where decoding matters)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("micro-llama")
    vocab = {w: i for i, w in enumerate(["<unk>", "<s>", "</s>", "the", "quick", "brown", "fox", "jumps", "over"])}
    words = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(
        tokenizer_object=words, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<unk>"
    ).save_pretrained(folder)
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        bos_token_id=1,
        eos_token_id=2,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        LlamaForCausalLM(config).save_pretrained(folder)
    return folder


def test_local_model_load_is_one_step_line_without_library_bars(
    micro_llama: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import torch

    from mcu_exp.config import ModelConfig
    from mcu_exp.llm.local import LocalBackend

    cfg = ModelConfig(name="tiny-llama", backend="local", model_id=str(micro_llama), device="cpu", num_threads=1)
    threads = torch.get_num_threads()
    capfd.readouterr()
    try:
        LocalBackend(cfg).load()
    finally:
        torch.set_num_threads(threads)
    err = capfd.readouterr().err
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Loading tiny-llama (transformers, CPU, 1 thread)… done in "), err
    assert lines[0].endswith(" s")
    assert "Loading weights" not in err and "%|" not in err


def _scorer_config() -> Any:
    from mcu_exp.config import ScorerConfig

    schema = OmegaConf.structured(ScorerConfig)
    return OmegaConf.to_object(OmegaConf.merge(schema, OmegaConf.load(REPO / "conf" / "scorer" / "minilm.yaml")))


def test_scoring_has_progress_bars_that_quiet_turns_off(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from mcu_exp.scoring import BertScorer, bertscore

    monkeypatch.setattr(bertscore, "BAR_DELAY_S", 0.0)  # these few texts take far less than the delay

    texts = [
        "Returns the sum of the list.",
        "Adds up the values of the list.",
        "Closes the stream.",
        "Sorts the array in place.",
    ]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        capfd.readouterr()
        shown = BertScorer(_scorer_config(), progress=True)
        first = shown.pairwise_f1(texts)
        err = capfd.readouterr().err
        hidden = BertScorer(_scorer_config(), progress=False)
        second = hidden.pairwise_f1(texts[::-1])
        quiet_err = capfd.readouterr().err
    finally:
        torch.set_num_threads(threads)
    assert first.shape == second.shape == (4, 4)
    assert "embed: 100%" in err and "4/4" in err and "score: 100%" in err and "10/10" in err, err
    loads = [line for line in err.replace("\r", "\n").splitlines() if line.startswith("Loading scorer")]
    assert len(loads) <= 1  # none when an earlier test of this process loaded the shared encoder
    if loads:
        assert loads[0].startswith("Loading scorer all-MiniLM-L6-v2 (BERTScore, layer 6, CPU)… done in ")
    assert "Loading weights" not in err
    assert "embed" not in quiet_err and "score" not in quiet_err, quiet_err


def test_step_prints_its_final_line_and_failures(capsys: pytest.CaptureFixture[str]) -> None:
    with console.step("Loading thing (X, CPU)"):
        pass
    with pytest.raises(RuntimeError), console.step("Loading other"):
        raise RuntimeError("boom")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("Loading thing (X, CPU)… done in ") and lines[0].endswith(" s")
    assert lines[1] == "Loading other… failed"


def test_log_lines_and_warnings_print_above_progress_bars(capsys: pytest.CaptureFixture[str]) -> None:
    from tqdm import tqdm

    logger = logging.getLogger("mcu_exp.test_first_screen")
    handler = logging.StreamHandler(sys.stderr)  # a console handler, like Hydra's
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with console.job_console(progress=True, loggers=[logger]):
            bar = tqdm(total=4, desc="generate", file=sys.stderr, mininterval=0)
            bar.update(2)
            logger.warning("a log line")
            warnings.warn("a warning", UserWarning, stacklevel=1)
            bar.update(2)
            bar.close()
        assert logger.handlers == [handler]  # restored
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    shown = [line.rsplit("\r", 1)[-1] for line in capsys.readouterr().err.split("\n")]  # as a terminal shows it
    for message in ("a log line", "a warning"):
        lines = [x for x in shown if message in x]  # a warning: its line, then the source line
        assert lines and all("generate" not in x for x in lines), lines  # never glued to a bar


def test_job_console_sets_and_restores_the_process_settings() -> None:
    assert console.progress_enabled() and not console.loud("mlflow")
    with console.job_console(progress=False, verbose=["mlflow"]):
        assert not console.progress_enabled() and console.progress_enabled(True)
        assert console.loud("mlflow") and console.loud("mlflow.store") and not console.loud("transformers")
    with console.job_console(progress=True, verbose=True):
        assert console.loud("transformers")
    assert console.progress_enabled() and not console.loud("mlflow")


def test_mlflow_store_creation_is_quiet_unless_verbose(tmp_path: Path) -> None:
    """MLflow's "Creating initial MLflow database tables…" INFO lines: absent once the
    libraries are quieted (and present at INFO, so the check can see them)."""
    script = f"""
import logging, os
os.environ.pop("MLFLOW_LOGGING_LEVEL", None)
from mcu_exp import console
console.configure(verbose=False)
console.quiet_libraries()
from mlflow.tracking import MlflowClient
MlflowClient(tracking_uri="sqlite:///{tmp_path / "quiet.db"}").search_experiments()
print("--- verbose ---", file=__import__("sys").stderr, flush=True)
logging.getLogger("mlflow").setLevel(logging.INFO)
MlflowClient(tracking_uri="sqlite:///{tmp_path / "loud.db"}").search_experiments()
"""
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    quiet, loud = res.stderr.split("--- verbose ---")
    assert "Creating initial MLflow database tables" not in quiet, quiet
    assert "Creating initial MLflow database tables" in loud, loud  # the check can see it
