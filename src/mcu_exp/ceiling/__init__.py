"""The humans' own noise ceiling, and a proxy's alignment read against it.

:mod:`.split_half` computes the ceiling (split-half figures, Krippendorff's α) from a dataset's
repeated evaluations; :mod:`.versus` sets a proxy's figures beside it (the share of ceiling).
Each module is imported on its own (nothing here is imported eagerly), so a new statistic of
the ceiling is one more module in this package.
"""
