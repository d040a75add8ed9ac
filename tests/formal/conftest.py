"""Every test in this folder is a formal proof (marker ``formal``): `make test` runs them at
the depths that take seconds, `make formal` (INCEPTIONN_FORMAL=1) at full depth.

Under `make formal` the checks run longest first, so that the last minutes of a run are
not one long solver alone on one worker: by each check's seconds in the last `make
formal` here (build/formal/test-times.txt, written at its end), else the engines' whole
checks (the longest, docs/verification.md) first."""

import os
from collections import defaultdict
from pathlib import Path

import pytest

SLOW = os.environ.get("INCEPTIONN_FORMAL") == "1"
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


@pytest.hookimpl(trylast=True)      # after the root conftest's order by file
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/formal/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.formal)
    if not SLOW:
        return
    times = _read_times()

    def key(item):
        if times:
            return -times.get(item.nodeid, 0.0)
        return -float("test_formal_engines.py" in item.nodeid)
    items.sort(key=key)          # stable: ties keep their order


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
