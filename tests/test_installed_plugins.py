"""What is installed does not change a test's outcome: with a plugin package on the path that
adds decision rules, and its entries loaded before the tests run (as in a test worker that
ran a job or a subcommand first), the rule and registry tests still pass. They compare against
the built-in entries (``Registry.origin(name) is None``), not against whatever is registered.

The plugin is built and installed into a temporary ``--target`` folder that only the
subprocess's ``PYTHONPATH`` names, so this test process and every other test never see it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.plugin_packages import install_plugin, with_site
from support.sweeps import REPO, app_env

pytestmark = pytest.mark.slow  # a pip install and a pytest run in a subprocess

RULES_PLUGIN = '''\
"""Two decision rules: one P1 can feed (alpha scores), one it cannot (similarity)."""


def register():
    from mcu_exp.calibration import RuleDecision, register_rule

    @register_rule("toy_alpha", needs=("alpha_cal", "alpha_test"))
    def toy_alpha(scores, cfg):
        return RuleDecision("toy_alpha", (scores["alpha_test"] >= 0.5).astype(int))

    @register_rule("toy_cut", needs=("similarity_test",), params={"cut": 0.5})
    def toy_cut(scores, cfg):
        cut = float(cfg.params["cut"])
        return RuleDecision("toy_cut", (scores["similarity_test"] >= cut).astype(int), params={"cut": cut})
'''

# A pytest plugin (``-p``) loading every installed mcu-exp plugin before the first test.
LOAD_FIRST = """\
def pytest_sessionstart(session):
    from mcu_exp.app import config_dir
    from mcu_exp.plugins import start_plugins

    assert start_plugins(config_dir()) == ["toy_rules"], "the plugin package did not load"
"""

RULE_TESTS = [
    "tests/calibration/test_decision_rules.py",
    "tests/calibration/test_rule_contract.py",
    "tests/test_registry.py",
]


def test_rule_tests_pass_with_a_plugin_package_installed(tmp_path_factory: pytest.TempPathFactory) -> None:
    site = install_plugin(
        tmp_path_factory, "toy-rules", "0.1", "toy_rules", "toy_rules:register", {"__init__.py": RULES_PLUGIN}
    )
    (site / "mcu_test_load_plugins_first.py").write_text(LOAD_FIRST, encoding="utf-8")
    outputs = tmp_path_factory.mktemp("outputs")
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "mcu_test_load_plugins_first",
            *RULE_TESTS,
        ],
        cwd=REPO,
        env=with_site(app_env(outputs), site),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert " passed" in res.stdout.splitlines()[-1] and "failed" not in res.stdout.splitlines()[-1]
