"""Run bundles: one file holding everything a job's table depends on, replayable anywhere
without a model (``mcu-exp bundle export|replay|show``; docs/reproducibility.md)."""
