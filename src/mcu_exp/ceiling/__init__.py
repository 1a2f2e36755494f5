"""The humans' own ceiling: split-half (lower) and reader-model (upper) bounds, over programs."""
