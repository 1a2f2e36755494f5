"""The humans' own ceiling: how well the reader panel agrees with itself and with a model of it."""
