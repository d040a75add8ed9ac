"""What the fuzz tests (tests/test_fuzz_*.py) share: how many examples they run.

In `make test` each runs a fixed, small number of examples, derandomized (the same ones
every run, seconds in all); `make fuzz` sets INCEPTIONN_FUZZ=N to run N times as many,
freshly drawn, to look for new failures. The cases the fuzzers found are explicit
@example seeds, run every time.
"""

import os

from hypothesis import HealthCheck, settings

SCALE = int(os.environ.get("INCEPTIONN_FUZZ", "0") or 0)


def fuzz_settings(examples: int):
    """Hypothesis settings: `examples` derandomized in make test, SCALE times as many
    (random) under make fuzz."""
    return settings(max_examples=examples * max(SCALE, 1), derandomize=SCALE == 0,
                    deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])
