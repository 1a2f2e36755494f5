"""Helpers importable by jobs the tests launch (PYTHONPATH=tests)."""
