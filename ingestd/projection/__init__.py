"""The projections are a function of the log: rebuild, re-projection when the rules changed,
replay, the canonical dumps it compares, and verify."""
