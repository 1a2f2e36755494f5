"""A whole job against a fake OpenAI server: the planted key reaches the server and nothing else."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from support.fake_api import PLANTED_KEY, FakeServer, _received_key
from support.mlflow_store import seed_store

pytestmark = pytest.mark.slow  # jobs in subprocesses: tens of seconds on 2 cores
# ROUGE-L scores the summaries: which scorer runs does not matter here, and it loads no encoder.

REPO = Path(__file__).resolve().parents[3]


def test_planted_key_is_in_no_log_param_or_artifact(fake_server: FakeServer, tmp_path: Path) -> None:
    outputs = seed_store(tmp_path / "outputs")
    env = {**os.environ, "OPENAI_API_KEY": PLANTED_KEY, "MCU_EXP_OUTPUTS": str(outputs)}
    env.pop("MLFLOW_TRACKING_URI", None)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcu_exp",
            "model=gpt-4o",
            f"model.base_url={fake_server.url}/v1",
            "model.requests_per_minute=null",
            "model.tokens_per_minute=null",
            "debug=quick",
            "scorer=rougel",
            "dataset.limit=4",
            "proxy.k=4",
            "proxy.k_cal=2",
            "quiet=true",
            "evaluation.plots=false",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    # The key did travel, to the server only.
    answered = fake_server.answered()
    assert len(answered) == 4  # 4 programs, 4 samples each in one request (n)
    assert all(_received_key(r.headers) == PLANTED_KEY for r in answered)
    assert PLANTED_KEY not in res.stdout and PLANTED_KEY not in res.stderr
    files = [p for p in outputs.rglob("*") if p.is_file()]
    assert any(p.name == "mlflow.db" for p in files) and any(p.suffix == ".log" for p in files)
    assert any(p.name == "generations.sqlite" for p in files)
    for path in files:
        assert PLANTED_KEY.encode() not in path.read_bytes(), f"planted key found in {path}"
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("mcu_exp-debug").experiment_id])
    for key, value in {**run.data.params, **run.data.tags}.items():
        assert PLANTED_KEY not in value and PLANTED_KEY not in key
    assert run.data.params.get("model.api_key_env") in (None, "OPENAI_API_KEY")  # unset values are not logged


CONFIG_TOKEN = "tok-config-SECRET-31415926"  # reaches the job through ${oc.env:…} in an override
URL_PASSWORD = "pw-url-SECRET-27182818"  # written in model.base_url
QUERY_KEY = "qk-url-SECRET-16180339"  # ?key= in model.base_url
HEADER_SECRETS = ("hdr-auth-SECRET-14142135", "hdr-cookie-SECRET-17320508", "hdr-xkey-SECRET-22360679")
HEADERS = {  # extra HTTP headers sent with every request (model.quirks.params.extra_headers)
    "Proxy-Authorization": f"Bearer {HEADER_SECRETS[0]}",  # Authorization: the URL's login is it
    "Cookie": f"session={HEADER_SECRETS[1]}",
    "X-Api-Key": HEADER_SECRETS[2],
}


def test_config_token_url_password_query_key_and_headers_are_in_no_output(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    outputs = seed_store(tmp_path / "outputs")
    env = {**os.environ, "OPENAI_API_KEY": PLANTED_KEY, "MCU_TEST_TOKEN": CONFIG_TOKEN, "MCU_EXP_OUTPUTS": str(outputs)}
    env.pop("MLFLOW_TRACKING_URI", None)
    url = f"http://reader:{URL_PASSWORD}@127.0.0.1:{fake_server.port}/v1?key={QUERY_KEY}"
    headers = [f"+model.quirks.params.extra_headers.{name}='{value}'" for name, value in HEADERS.items()]
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcu_exp",
            "model=gpt-4o",
            "model.backend=openai_compatible",  # no API key: the URL's login authenticates (a key would be refused)
            f"model.base_url='{url}'",
            "+model.quirks.extra_body.api_key=${oc.env:MCU_TEST_TOKEN}",
            *headers,
            "hydra.verbose=true",  # Hydra's config dump and the SDK's request options are logged too
            "model.requests_per_minute=null",
            "model.tokens_per_minute=null",
            "debug=quick",
            "scorer=rougel",
            "dataset.limit=4",
            "proxy.k=4",
            "proxy.k_cal=2",
            "quiet=true",
            "evaluation.plots=false",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    # The job authenticated: the server saw the token in every request body.
    answered = fake_server.answered()
    assert len(answered) == 4 and all(r.body.get("api_key") == CONFIG_TOKEN for r in answered)
    assert all(f"key={QUERY_KEY}" in r.path for r in answered)
    login = "Basic " + base64.b64encode(f"reader:{URL_PASSWORD}".encode()).decode()
    assert all(r.headers.get("authorization") == login for r in answered)  # the URL's login, as HTTP Basic
    assert all(r.headers.get(name.lower()) == HEADERS[name] for r in answered for name in HEADERS)
    files = [p for p in outputs.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"mlflow.db", "generations.sqlite", "config.yaml", "hydra.yaml", "overrides.yaml", "specs.json"} <= names
    logs = b"".join(p.read_bytes() for p in files if p.suffix == ".log")
    assert b"HTTP Request: POST http://***@127.0.0.1" in logs  # the request lines were logged, masked
    planted = [CONFIG_TOKEN, URL_PASSWORD, QUERY_KEY, PLANTED_KEY, *HEADER_SECRETS]
    leaks = [f"{secret} on the console" for secret in planted if secret in res.stdout + res.stderr]
    leaks += [
        f"{secret} in {path.relative_to(outputs)}"
        for secret in planted
        for path in files
        if secret.encode() in path.read_bytes()
    ]
    assert not leaks
