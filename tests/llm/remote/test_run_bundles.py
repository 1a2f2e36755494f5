"""Run bundles end to end: a job against the fake OpenAI server writes its bundle, the bundle
is exported by run id, replayed elsewhere (no request, no model, no key, no original cache)
to identical results; an edited bundle is refused and named; no secret enters it; a job on a
local model replays after its weights are gone."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.bundle.replay import VOLATILE
from mcu_exp.cli.bundle import main as bundle_main
from mcu_exp.pipeline import run_job
from support.compose import compose
from support.fake_api import PLANTED_KEY, FakeServer
from support.mlflow_store import seed_store
from support.sweeps import multirun_in_process
from support.tiny_llama import model_overrides

URL_PASSWORD = "pw-bundle-SECRET-5772156649"
QUICK = [
    "debug=quick",
    "scorer=rougel",
    "dataset.limit=4",
    "proxy.k=4",
    "proxy.k_cal=2",
    "quiet=true",
    "evaluation.plots=false",
    "evaluation.bootstrap_resamples=1000",
]


def compose_job(outputs: Path, *overrides: str):  # type: ignore[no-untyped-def]
    """The config the app composes from ``overrides``, its outputs (and MLflow store) in ``outputs``."""
    return compose(*QUICK, f"paths.outputs={outputs}", *overrides)


def remote(server: FakeServer) -> list[str]:
    """The job's model: gpt-4o's settings on the fake server, a password in its URL (its only
    credential: beside an API key a URL's login is refused, so the backend is openai_compatible)."""
    url = f"http://reader:{URL_PASSWORD}@127.0.0.1:{server.port}/v1"
    return [
        "model=gpt-4o",
        "model.backend=openai_compatible",
        f"model.base_url='{url}'",
        "model.requests_per_minute=null",
        "model.tokens_per_minute=null",
    ]


def only_run(outputs: Path):  # type: ignore[no-untyped-def]
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    (run,) = client.search_runs([e.experiment_id for e in client.search_experiments()])
    return run


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict:  # type: ignore[type-arg]
    """One job on the fake server (tracking.bundle=true), its bundle exported by run id."""
    tmp = tmp_path_factory.mktemp("bundle-job")
    server = FakeServer().start()
    patch = pytest.MonkeyPatch()
    try:
        patch.setenv("OPENAI_API_KEY", PLANTED_KEY)
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        outputs = seed_store(tmp / "outputs")
        run_job(compose_job(outputs, *remote(server), "tracking.bundle=true"))
        requests = len(server.answered())
        run = only_run(outputs)
        out = tmp / "published" / "bundle.zip"
        bundle_main(
            ["export", run.info.run_id, "--out", str(out), "--tracking-uri", f"sqlite:///{outputs / 'mlflow.db'}"]
        )
        results = next(outputs.glob("runs/*/*/results"))
        yield {"server": server, "requests": requests, "bundle": out, "results": results, "outputs": outputs}
    finally:
        patch.undo()
        server.stop()


def test_export_replays_elsewhere_to_identical_results_without_requests(
    exported: dict,
    tmp_path: Path,  # type: ignore[type-arg]
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert exported["requests"] == 4  # the job paid for its samples: 4 programs, one request each
    elsewhere = tmp_path / "elsewhere" / "bundle.zip"
    elsewhere.parent.mkdir()
    shutil.copy(exported["bundle"], elsewhere)
    shutil.rmtree(exported["outputs"] / "cache")  # the store the samples came from is gone
    monkeypatch.delenv("OPENAI_API_KEY")
    capsys.readouterr()
    bundle_main(["replay", str(elsewhere), "--keep", str(tmp_path / "replay")])
    out = capsys.readouterr().out
    assert len(exported["server"].answered()) == exported["requests"]  # not one request more
    assert "vs human labels" in out and "metrics and 10 files identical to the bundle's" in out, out[-2000:]
    replayed = next((tmp_path / "replay" / "outputs" / "0").glob("runs/*/*/results"))
    for name in ("per_program.csv", "scores.csv", "alignment.csv", "summaries.csv", "measures.csv"):
        assert (replayed / name).read_bytes() == (exported["results"] / name).read_bytes(), name
    before = json.loads((exported["results"] / "metrics.json").read_text())
    after = json.loads((replayed / "metrics.json").read_text())
    assert after["model_loaded"] == 0 and after["scorer_loaded"] == 0 and after["generation_cache_misses"] == 0
    result = lambda metrics: {k: v for k, v in metrics.items() if not k.endswith(VOLATILE) and "usage" not in k}  # noqa: E731
    assert result(after) == result(before)


def test_show_prints_manifest_and_headline(exported: dict, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[type-arg]
    bundle_main(["show", str(exported["bundle"])])
    out = capsys.readouterr().out
    assert "1 job(s)" in out and "16 samples" in out and "F1 " in out and "digest" in out


def _edited(source: Path, target: Path, member: str, edit) -> Path:  # type: ignore[no-untyped-def]
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            blob = old.read(info)
            new.writestr(info.filename, edit(blob) if info.filename == member else blob)
    return target


def test_an_edited_sample_or_result_is_named_and_refused(
    exported: dict,
    tmp_path: Path,  # type: ignore[type-arg]
    capsys: pytest.CaptureFixture[str],
) -> None:
    with zipfile.ZipFile(exported["bundle"]) as archive:
        first = json.loads(archive.read("cache/samples.jsonl").decode().splitlines()[0])

    def edit_sample(blob: bytes) -> bytes:
        lines = blob.decode().splitlines()
        row = json.loads(lines[0])
        row[1] = row[1] + " (edited)"
        return "\n".join([json.dumps(row), *lines[1:]]).encode() + b"\n"

    tampered = _edited(exported["bundle"], tmp_path / "sample.zip", "cache/samples.jsonl", edit_sample)
    with pytest.raises(SystemExit) as stop:
        bundle_main(["replay", str(tampered)])
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert f"sample {first[0]}" in err and "edited" in err and "Traceback" not in err
    edit_metric = lambda blob: blob.replace(b'"f1": ', b'"f1": 0.99, "x": ', 1)  # noqa: E731
    tampered = _edited(exported["bundle"], tmp_path / "metric.zip", "jobs/0/results/metrics.json", edit_metric)
    with pytest.raises(SystemExit):
        bundle_main(["replay", str(tampered)])
    assert "member jobs/0/results/metrics.json differs" in capsys.readouterr().err


def test_bit_identity_is_expected_only_on_the_bundles_kernels(exported: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    """Replayed where it was made, a bundle's values come back bit for bit and no kernel differs;
    the same bundle saying it was made on a CPU with other flags is replayed as another
    machine's: the check names the flags, so no bit-identity is demanded of it."""
    from mcu_exp.bundle.replay import replay

    (same,) = replay(exported["bundle"], run_job, tmp_path / "same")
    assert same.difference is None and same.tolerated == 0 and same.kernels == ()

    def other_cpu(blob: bytes) -> bytes:
        manifest = json.loads(blob)
        flags = manifest["environment"]["cpu_flags"]
        manifest["environment"]["cpu_flags"] = [f for f in flags if not f.startswith("avx512")] + ["avx10_2"]
        return json.dumps(manifest).encode()

    moved = _edited(exported["bundle"], tmp_path / "other-cpu.zip", "manifest.json", other_cpu)
    (other,) = replay(moved, run_job, tmp_path / "other")
    assert other.difference is None
    assert other.kernels and other.kernels[0].startswith("CPU flags: this machine lacks avx10_2"), other.kernels


def test_no_secret_enters_the_bundle(exported: dict) -> None:  # type: ignore[type-arg]
    raw = exported["bundle"].read_bytes()
    with zipfile.ZipFile(exported["bundle"]) as archive:
        members = [archive.read(info) for info in archive.infolist()]
    for secret in (PLANTED_KEY, URL_PASSWORD):
        assert secret.encode() not in raw
        assert all(secret.encode() not in blob for blob in members), secret


def test_local_model_job_replays_after_its_weights_are_gone(
    tiny_llama: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    weights = shutil.copytree(tiny_llama, tmp_path / "weights")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    outputs = seed_store(tmp_path / "outputs")
    run_job(compose_job(outputs, *model_overrides(weights), "model.max_new_tokens=8", "tracking.bundle=true"))
    bundle = next(outputs.glob("runs/*/*/bundle/run-bundle.zip"))
    shutil.rmtree(weights)  # the model path is poisoned: nothing left to load or to fingerprint
    capsys.readouterr()
    bundle_main(["replay", str(bundle)])
    out = capsys.readouterr().out
    assert "files identical to the bundle's" in out, out[-2000:]


@pytest.mark.slow
def test_sweep_parent_bundle_replays_every_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A real multirun, here in this process (jobs logged without bundles: export reads their
    keys and the cache)."""
    server = FakeServer().start()
    try:
        outputs = seed_store(tmp_path / "outputs")
        args = ["decision.epsilon=0.1,0.3", *remote(server), *QUICK, "tracking.sweep_report=false"]
        multirun_in_process(outputs, *args, OPENAI_API_KEY=PLANTED_KEY)
        assert len(server.answered()) == 4
    finally:
        server.stop()
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    (parent,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    out = tmp_path / "sweep.zip"
    bundle_main(
        ["export", parent.info.run_id, "--out", str(out), "--tracking-uri", f"sqlite:///{outputs / 'mlflow.db'}"]
    )
    shutil.rmtree(outputs / "cache")
    capsys.readouterr()
    bundle_main(["replay", str(out)])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  job ")]
    assert len(lines) == 2 and all("files identical to the bundle's" in line for line in lines), lines
    assert "ε=0.1" in lines[0] and "ε=0.3" in lines[1]


def test_the_report_links_each_run_bundle(exported: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    from mcu_exp.report.build import make_report

    uri = f"sqlite:///{exported['outputs'] / 'mlflow.db'}"
    out = make_report(uri, experiments=("mcu_exp-debug",), include_debug=True, log=False, out=tmp_path / "report")
    bundle = next(exported["outputs"].glob("mlartifacts/**/bundle/run-bundle.zip"))
    assert "Run bundles" in (out / "report.md").read_text() and str(bundle) in (out / "report.md").read_text()
    assert str(bundle) in (out / "runs.csv").read_text()
