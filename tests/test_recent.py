"""The per-process memo of recent values: made once per key, bounded, least recently used out first."""

from __future__ import annotations

from mcu_exp.recent import Recent


def test_a_value_is_made_once_and_the_least_recently_used_leaves_first() -> None:
    made: list[str] = []
    memo: Recent[str] = Recent(2)

    def get(key: str) -> str:
        return memo.get(key, lambda: made.append(key) or key.upper())

    assert [get("a"), get("b"), get("a")] == ["A", "B", "A"] and made == ["a", "b"]
    get("c")  # "b" is the least recently used now
    assert list(memo.values) == ["a", "c"]
    get("b")
    assert made == ["a", "b", "c", "b"] and list(memo.values) == ["c", "b"]
