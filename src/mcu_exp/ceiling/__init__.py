"""The humans' own ceiling: split-half (lower) and reader-model (upper) bounds, a crossed reader × program model, and within-reader concordance."""
