"""Every test in this folder is a formal check (marker ``formal``). Those that run a solver
(marker ``solver``) are left out of `make test`: `make formal-quick`
(INCEPTIONN_FORMAL=quick) runs them at the depths that take seconds, `make formal`
(INCEPTIONN_FORMAL=1) at full depth. `make test` runs the rest (the store depth's
simulation, make formal's own budget and selection).

Under `make formal` the checks run longest first, so that the last minutes of a run are
not one long solver alone on one worker: by each check's seconds in the last `make
formal` here (build/formal/test-times.txt, written at its end), else the engines' whole
checks (the longest, docs/verification.md) first."""

import os
from collections import defaultdict
from pathlib import Path

import pytest

SLOW = os.environ.get("INCEPTIONN_FORMAL") == "1"
SOLVERS = SLOW or os.environ.get("INCEPTIONN_FORMAL") == "quick"
# The checks that took 6 s or more each at their short depths (pytest -n 2 on 2 cores):
# together about half of the short run's time. `make formal` runs them, at full depth;
# `make formal-quick` the others (docs/verification.md).
FORMAL_ONLY = (
    "test_formal_liveness.py::test_live[live_rx_du]",                  # 35 s
    "test_formal_tx_stages.py::test_front_hsum_never_overflows_bmc",   # 20 s
    "test_formal_tx_stages.py::test_finisher_covers",                  # 18 s
    "test_formal_tx_liveness.py::test_live[live_tx_front]",            # 11 s
    "test_formal_liveness.py::test_live[live_tx_feeder]",              # 11 s
    "test_formal_liveness.py::test_live[live_rx_realign]",             # 11 s
    "test_formal_rx_stages.py::test_rx_stage[rx_back_bmc]",            # 10 s
    "test_formal_tx_stages.py::test_feeder_clen_never_overflows_bmc",  # 9 s
    "test_formal_liveness.py::test_live[live_rx_front_engine]",        # 8 s
    "test_formal_tx_stages.py::test_egress_liveness_bmc",              # 7 s
    "test_formal_tx_stages.py::test_bug_egress_shallow_outq_found",    # 7 s
    "test_formal_tx_stages.py::test_egress_back_to_back_cover",        # 7 s
    "test_formal_tx_liveness.py::test_live[live_tx_cu]",               # 7 s
    "test_formal_tx_stages.py::test_bug_egress_empty_last_beat_found", # 6 s
    "test_formal_tx_liveness.py::test_live[live_tx_finisher]",         # 6 s
    "test_formal_liveness.py::test_live[live_rx_back]",                # 6 s
)
TIMES = Path(__file__).resolve().parents[2] / "build" / "formal" / "test-times.txt"
_seconds: dict = defaultdict(float)


def _read_times():
    out = {}
    if TIMES.exists():
        for line in TIMES.read_text().splitlines():
            secs, _, nodeid = line.strip().partition(" ")
            try:
                out[nodeid.strip()] = float(secs)
            except ValueError:
                continue
    return out


@pytest.hookimpl(tryfirst=True)     # before `-m formal` deselects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/formal/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.formal)
            if not SOLVERS and item.get_closest_marker("solver"):
                item.add_marker(pytest.mark.skip(
                    reason="a solver run: make formal-quick (short depths) or make formal"))
            elif not SLOW and item.nodeid.endswith(FORMAL_ONLY):
                item.add_marker(pytest.mark.skip(
                    reason="6 s or more at its short depth: make formal (INCEPTIONN_FORMAL=1)"))


class _LongestFirst:
    """make formal's order, after the root conftest's order by file (trylast)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        times = _read_times()

        def key(item):
            if times:
                return -times.get(item.nodeid, 0.0)
            return -float("test_formal_engines.py" in item.nodeid)
        items.sort(key=key)          # stable: ties keep their order


def pytest_configure(config):
    level = os.environ.get("INCEPTIONN_FORMAL", "")
    if level not in ("", "0", "1", "quick"):
        # Any other value would skip every solver run and say nothing of the typo.
        raise pytest.UsageError(f"INCEPTIONN_FORMAL={level!r}: expected 1 (make formal), "
                                "quick (make formal-quick), or unset")
    if SLOW:
        config.pluginmanager.register(_LongestFirst(), "formal-longest-first")


def pytest_runtest_logreport(report):
    if SLOW and "tests/formal/" in report.nodeid:
        _seconds[report.nodeid] += getattr(report, "duration", 0.0) or 0.0


def pytest_terminal_summary(terminalreporter):
    # Only a whole make formal's times replace the order the next one starts from.
    if not (SLOW and _seconds) or terminalreporter.config.getoption("file_or_dir") not in (
            None, [], ["tests/formal"], ["tests/formal/"]):
        return
    TIMES.parent.mkdir(parents=True, exist_ok=True)
    TIMES.write_text("".join(f"{s:9.1f} {n}\n" for n, s in sorted(_seconds.items(),
                                                                  key=lambda kv: -kv[1])))
