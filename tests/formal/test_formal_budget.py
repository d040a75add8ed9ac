"""make formal's stated time: each task's solver budget is the per-task budget cut to
what is left of the run's deadline, and no task starts with under a minute left."""

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
