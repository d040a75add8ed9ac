"""make formal's stated time: each task's solver budget is the per-task budget cut to
what is left of the run's deadline, and no task starts with under a minute left; and
make formal's own selection (`-m formal`) finds the checks, the engines' whole ones first."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from stream_props import task_budget


def test_budget_is_the_per_task_one_without_a_deadline(monkeypatch):
    monkeypatch.delenv("INCEPTIONN_FORMAL_DEADLINE", raising=False)
    monkeypatch.setenv("INCEPTIONN_FORMAL_BUDGET", "1200")
    assert task_budget("t") == 1200


def test_budget_is_cut_to_what_is_left_of_the_run(monkeypatch):
    monkeypatch.setenv("INCEPTIONN_FORMAL_BUDGET", "1200")
    monkeypatch.setenv("INCEPTIONN_FORMAL_DEADLINE", "10000")
    assert task_budget("t", now=0) == 1200
    assert task_budget("t", now=9500) == 500
    with pytest.raises(AssertionError, match="t: not started: the run's deadline"):
        task_budget("t", now=9950)
    with pytest.raises(AssertionError, match="is 0 s away"):
        task_budget("t", now=20000)


def test_make_formal_selects_every_check_longest_first():
    # The marker is added at collection; added after `-m` deselects, make formal ran
    # nothing and said "no tests ran".
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, INCEPTIONN_FORMAL="1")
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p",
                          "no:cacheprovider", "-p", "no:xdist", "-m", "formal", "tests/formal"],
                         cwd=root, env=env, capture_output=True, text=True, timeout=120).stdout
    ids = [line for line in out.splitlines() if "::" in line]
    assert len(ids) > 100, out[-2000:]
    assert {i.split("::")[0] for i in ids} >= {"tests/formal/test_formal_engines.py",
                                                "tests/formal/test_formal_fifos.py"}
    times = root / "build" / "formal" / "test-times.txt"
    if not times.exists():        # no earlier run's times: the engines' whole checks lead
        assert ids[0].startswith("tests/formal/test_formal_engines.py::"), ids[:3]
