"""The one registry every extension point uses: lazy entries, did-you-mean errors, freezing."""

from __future__ import annotations

import pytest

from mcu_exp.registry import FrozenRegistry, PluginError, Registry, UnknownName


def test_registration_order_lookup_and_decorator():
    reg: Registry[int] = Registry("widget", key="widget.name")
    reg.add("alpha", 1)

    @reg.register("beta")
    def beta() -> int:
        return 2

    assert reg.names() == ("alpha", "beta")
    assert reg["alpha"] == 1 and reg["beta"] is beta
    assert "alpha" in reg and "gamma" not in reg
    assert reg.get("gamma", 7) == 7
    with pytest.raises(ValueError, match="already registered"):
        reg.add("alpha", 3)
    assert reg.add("alpha", 3, replace=True) == 3 and reg.names() == ("alpha", "beta")


def test_unknown_name_is_one_line_with_a_suggestion():
    reg: Registry[int] = Registry("metric", key="evaluation.metrics")
    for name in ("f1", "accuracy", "auc_score"):
        reg.add(name, 0)
    with pytest.raises(UnknownName) as info:
        reg["acuracy"]
    message = str(info.value)
    assert "\n" not in message
    assert "unknown metric 'acuracy'" in message and "did you mean 'accuracy'?" in message
    assert "evaluation.metrics" in message and "auc_score" in message
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)


def test_lazy_entries_import_on_first_use_and_fail_in_one_line():
    reg: Registry[object] = Registry("provider")
    reg.add_lazy("join", "os.path:join")
    reg.add_lazy("broken", "mcu_exp_no_such_module:thing")
    import os.path

    assert reg["join"] is os.path.join
    with pytest.raises(PluginError, match="provider 'broken': cannot import mcu_exp_no_such_module:thing"):
        reg["broken"]
    with pytest.raises(ValueError, match="not of the form"):
        reg.add_lazy("bad", "os.path.join")


def test_a_frozen_registry_refuses_new_entries_but_still_reads():
    reg: Registry[int] = Registry("rule")
    reg.add("conformal", 1)
    reg.freeze()
    with pytest.raises(FrozenRegistry, match="frozen after start-up"):
        reg.add("late", 2)
    assert reg["conformal"] == 1 and reg.frozen


def test_remove_takes_an_entry_out_and_spec_names_a_lazy_one():
    reg: Registry[object] = Registry("format")
    reg.add_lazy("join", "os.path:join")
    reg.add("one", 1)
    assert reg.spec("join") == "os.path:join" and reg.spec("one") is None
    assert reg.remove("one") == 1 and reg.names() == ("join",) and "one" not in reg
    import os.path

    assert reg.remove("join") is os.path.join and len(reg) == 0
    reg.add("two", 2)
    reg.freeze()
    with pytest.raises(FrozenRegistry):
        reg.remove("two")


def test_allow_replace_names_a_registered_entry_or_is_one_line_with_a_did_you_mean():
    import mcu_exp.evaluation  # noqa: F401 (the built-in metrics)
    from mcu_exp.registry import replacement_problems

    assert replacement_problems(["f11"]) == [
        "plugins.allow_replace: 'f11' is no registered entry: did you mean 'f1'? (expected names a plugin replaces)"
    ]
    assert replacement_problems(["f1"]) == []  # no plugin replaced anything here: nothing to refuse
