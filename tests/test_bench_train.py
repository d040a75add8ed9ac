"""make bench-train's report (the full run needs root and half an hour): the targets
printed with their miss ratios, from figures given here."""

import argparse

import pytest

from inceptionn.bench import train, train_methods, train_report
from inceptionn.commands import bench_train


def _row(step, hook, wire, acc):
    return {"step_s": step, "hook_s": hook, "tx_bytes_per_step": wire, "accuracy": acc}


def test_report_prints_every_target_with_its_ratio(tmp_path):
    res = {}
    for g in (1.0, None):
        res[(2, g)] = {"gloo": _row(2.0, 1.5, 100e6, 0.95), "fp16": _row(1.0, 0.8, 50e6, 0.95),
                       "ours-bounded": _row(1.2, 0.3, 25e6, 0.948)}
    res[(2, None)]["ours-emulate"] = _row(2.0, 3.0, 100e6, 0.948)
    res[(2, 1.0)]["ours-nic"] = _row(0.9, 0.5, 20e6, 0.95)
    lines = []
    train_report.report(res, out=lines.append)
    text = "\n".join(lines)
    assert "P=2 1 Gb/s: absolute bound vs gloo step time 0.60" in text
    assert "P=2 1 Gb/s: absolute bound vs fp16 step time 1.20  MISSED" in text
    # one host's 12.5 MB at 1 Gb/s is 0.1 s of wire; 0.3 s of hook is 3x, 2x the target
    assert "3.00x (target 1.5x: 2.00)" in text
    assert "+0.2 points below (target 0.5)" in text
    assert "emulated hook 3.000 s vs gloo's 1.500 s (target 1.5x: 1.33)" in text
    assert "P=2 1 Gb/s: NIC path vs fp16 step time 0.90 (vs gloo 0.45)" in text
    train_report.plot(res, tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_report_prints_the_default_hooks_targets_and_its_paths():
    res = {(2, 1.0): {"gloo": _row(2.0, 1.5, 100e6, 0.95), "fp16": _row(1.0, 0.8, 50e6, 0.95),
                      "ours": dict(_row(0.9, 0.5, 14e6, 0.95), paths={"ring": 12e6}),
                      "ours-ring": _row(0.9, 0.5, 14e6, 0.95)},
           (2, None): {"gloo": _row(1.0, 0.2, 100e6, 0.95),
                       "ours": dict(_row(1.04, 0.25, 100e6, 0.95), paths={"allreduce": 12e6})}}
    lines = []
    train_report.report(res, out=lines.append)
    text = "\n".join(lines)
    assert "decided: ring 12.0M values" in text and "decided: allreduce 12.0M values" in text
    assert ("P=2 1 Gb/s: vs gloo 0.45 (<= 1.05); vs gloo 0.45 (<= 0.5); vs fp16 0.90 (<= 1.0); "
            "vs every bucket coded 1.00") in text
    assert "P=2 unlimited: vs gloo 1.04 (<= 1.05)" in text
    res[(2, None)]["ours"]["step_s"] = 1.2
    lines.clear()
    train_report.report(res, out=lines.append)
    assert "P=2 unlimited: vs gloo 1.20 (<= 1.05: MISSED)" in "\n".join(lines)


def test_the_floor_without_any_exchange_says_when_half_of_gloo_is_out_of_reach():
    res = {(2, 1.0): {"gloo": _row(0.5, 0.3, 100e6, 0.95), "none": _row(0.3, 0.0, 0.0, 0.9),
                      "ours": _row(0.4, 0.1, 14e6, 0.95)},
           (2, 0.1): {"gloo": _row(4.0, 3.8, 100e6, 0.95), "none": _row(0.3, 0.0, 0.0, 0.9),
                      "ours": _row(0.8, 0.5, 14e6, 0.95)}}
    lines = []
    train_report.report(res, out=lines.append)
    text = "\n".join(lines)
    assert "P=2 1 Gb/s: vs gloo 0.80 (<= 1.05); vs gloo 0.80 (<= 0.5: MISSED); " \
           "no exchange vs gloo 0.60: 0.5 is out of reach on this machine" in text
    assert "P=2 0.1 Gb/s: vs gloo 0.20 (<= 1.05); vs gloo 0.20 (<= 0.5); " \
           "no exchange vs gloo 0.07\n" in text + "\n"


def test_no_exchange_hands_back_the_bucket_untouched():
    torch = pytest.importorskip("torch")

    class Bucket:
        def __init__(self, t):
            self.t = t

        def buffer(self):
            return self.t

    t = torch.arange(5.0)
    assert train_methods._no_exchange(None, Bucket(t)).wait() is t
    assert "none" in train_methods.RUN_METHODS and "none" not in train_methods.METHODS


def test_report_without_gloo_prints_the_rows_and_says_why_no_targets():
    # --methods that leaves gloo (and fp16) out: a KeyError before
    res = {(2, 1.0): {"ours-bounded": _row(1.2, 0.3, 25e6, 0.948)}}
    lines = []
    train_report.report(res, out=lines.append)
    text = "\n".join(lines)
    assert "ours-bounded" in text and "P=2 1 Gb/s: no gloo run here, so no targets" in text


def test_the_accuracy_comparison_flags_each_missed_target():
    res = {(2, "mlp", "mean"): {"gloo": _row(1, 1, 100e6, 0.900), "ours": _row(1, 1, 10e6, 0.897)},
           (2, "cnn", "sum"): {"gloo": _row(1, 1, 1e6, 0.950), "ours": _row(1, 1, 0.25e6, 0.950)},
           (2, "cnn", "mean"): {"gloo": _row(1, 1, 1e6, 0.950), "ours": _row(1, 1, 0.1e6, 0.930)}}
    lines = []
    train_report.report_compare(res, {"mlp": 60, "cnn": 300}, out=lines.append)
    text = "\n".join(lines)
    assert "P=2 mlp loss mean: 89.7% vs gloo 90.0% (+0.3 points below), 10.0x fewer bytes\n" \
        in text + "\n"
    assert "P=2 cnn loss sum: 95.0% vs gloo 95.0% (+0.0 points below), 4.0x fewer bytes  MISSED" \
        in text
    assert "P=2 cnn loss mean: 93.0% vs gloo 95.0% (+2.0 points below), 10.0x fewer bytes  MISSED" \
        in text
    assert train.compare_steps("mlp:60,cnn:300") == {"mlp": 60, "cnn": 300}
    for bad in ("mlp", "mlp:x", "rnn:5", "cnn:0"):
        with pytest.raises(ValueError, match="compare-steps"):
            train.compare_steps(bad)


def test_the_comparisons_methods_are_checked_and_a_run_without_ours_reports_its_rows():
    assert train.compare_methods("gloo,ours-emulate-default,ours-emulate") == \
        ("gloo", "ours-emulate-default", "ours-emulate")
    assert train.compare_methods(",".join(train_methods.ACCURACY_METHODS)) == \
        train_methods.ACCURACY_METHODS
    for bad in ("ours,gloo", "gloo,ours,ours", "gloo,ours-nic", ""):
        with pytest.raises(ValueError, match="compare-methods"):
            train.compare_methods(bad)
    res = {(2, "cnn", "mean"): {"gloo": _row(1, 1, 1e6, 0.981),
                                "ours-emulate-default": _row(1, 1, 1e6, 0.981)}}
    lines = []
    train_report.report_compare(res, {"cnn": 300}, out=lines.append)
    text = "\n".join(lines)
    assert "ours-emulate-default  98.1%" in text and "P=2 cnn loss mean:" not in text


def test_a_trial_run_never_overwrites_the_committed_figures(tmp_path):
    """--json elsewhere puts the plot beside it, and a run with no accuracy comparison
    (or no rates) leaves the earlier files as they were."""
    import argparse
    ap = argparse.ArgumentParser()
    bench_train.add_arguments(ap)
    default = ap.parse_args([])
    assert default.json == str(train.DEFAULT_JSON) and default.plot is None
    assert train.plot_path(default) == str(train.ROOT / "docs" / "img" / "bench_train.png")
    trial = argparse.Namespace(json=str(tmp_path / "t.json"), plot=None)
    assert train.plot_path(trial) == str(tmp_path / "t.png")
    assert train.plot_path(argparse.Namespace(json="x.json", plot="y.png")) == "y.png"
    acc = tmp_path / "bench_train_accuracy.json"
    acc.write_text("earlier")
    train.write_accuracy(trial, {})
    assert acc.read_text() == "earlier"
    train.write_accuracy(trial, {(2, "mlp", "sum"): {"gloo": _row(1, 1, 1, 0.9)}})
    assert '"2/mlp/sum"' in acc.read_text()


def test_bad_options_are_one_line_errors(capsys):
    """Each is refused before any rank starts (a zero step count used to end in a
    traceback from every rank; an unknown method ran as the bounded codec)."""
    from inceptionn import cli
    for argv in (["--accuracy-steps", "0"], ["--steps", "-1"], ["--batch", "0"],
                 ["--warmup", "x"], ["--methods", "gloo,ours-typo"], ["--methods", "gloo,gloo"],
                 ["--rates", "0,unlimited"], ["--rates", ""], ["--rates", "fast"],
                 ["--nic-rates", "-1"], ["--rates", "nan"], ["--lr", "0"], ["--lr", "nan"]):
        assert cli.main(["bench", "train", *argv]) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert err and "Traceback" not in "\n".join(err), argv
        assert err[-1].startswith("inceptionn bench train: error: argument"), (argv, err)
    # The NIC path is --nic-rates' (where namespaces are missing, that is said first).
    assert cli.main(["bench", "train", "--methods", "gloo,ours-nic"]) == 2
    err = capsys.readouterr().err
    assert "ours-nic is the NIC path" in err or "needs network namespaces" in err, err


def test_the_default_grid_times_the_default_hook_and_the_plot_draws_every_method():
    # "ours" (IncState() as a user registers it) was only timed when --methods named it,
    # and then left out of the plot.
    ap = argparse.ArgumentParser()
    bench_train.add_arguments(ap)
    assert "ours" in ap.parse_args([]).methods
    res = {(2, g): {m: _row(s, 0.1, 1e6, 0.9) for s, m in enumerate(
        ("gloo", "ours", "ours-bounded", "ours-emulate-default", "ours-nic"), 1)}
        for g in (0.1, 1.0, None)}
    got = train_report.series(res, 2)
    assert list(got) == ["gloo", "ours", "ours-bounded", "ours-emulate-default", "ours-nic"]
    assert got["ours"] == [(0.1, 2), (1.0, 2)]      # the unlimited wire is not on a log axis


def test_rates_and_methods_parse_to_lists():
    assert bench_train.rate_list(False)("0.1,1,unlimited") == [0.1, 1.0, None]
    assert bench_train.rate_list(True)("") == []
    assert bench_train.method_list("gloo, ours") == ["gloo", "ours"]


class _FakeNet:
    """Network's interface without namespaces (the ranks are faked too)."""

    def __init__(self, world):
        self.world = world

    def rate(self, gbps):
        pass

    def close(self):
        pass


def _fake_grid(monkeypatch, fail_at=None):
    """bench train's whole command with its namespaces and ranks replaced: each
    configuration's rows made up (rank count, rate and steps in them); the call
    numbered fail_at raises as a rank that died would."""
    from inceptionn.drivers import netns
    calls = []

    def run_config(net, world, gbps, methods, steps, warmup, batch, port, timeout=1800, extra=(),
                   block=0):
        calls.append((world, gbps, tuple(methods), steps, extra, block))
        if len(calls) == fail_at:
            raise RuntimeError("a rank failed (1): faked")
        return {m: _row(1.0 + i, 0.5, 1e6 / (i + 1), 0.9) for i, m in enumerate(methods)}

    monkeypatch.setattr(netns, "netns_available", lambda: None)
    monkeypatch.setattr(train, "Network", _FakeNet)
    monkeypatch.setattr(train, "run_config", run_config)
    return calls


TOY = ["bench", "train", "--worlds", "2", "--rates", "0.1,1,unlimited", "--nic-rates", "",
       "--methods", "gloo,fp16,ours-bounded", "--steps", "1", "--warmup", "0",
       "--accuracy-steps", "2", "--compare-steps", "mlp:1"]


def test_the_whole_command_with_a_comparison_writes_every_result(tmp_path, monkeypatch, capsys):
    """The issue's command line, ranks faked: it ended in an AttributeError in
    report_compare (the rate loop rebound the comparison's steps) and wrote nothing."""
    from inceptionn import cli
    calls = _fake_grid(monkeypatch)
    out = tmp_path / "out.json"
    assert cli.main([*TOY, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Accuracy after the same steps (mlp 1)" in text and f"wrote {out}" in text
    assert [c[1] for c in calls] == [None, None, 0.1, 1.0, None]
    assert [c[3] for c in calls] == [1, 1, 1, 1, 2]      # the unlimited wire: --accuracy-steps
    # the rates' methods interleave in blocks; the accuracy comparison's run one by one
    assert [c[5] for c in calls] == [0, 0, 2, 2, 2]
    import json
    got = json.loads(out.read_text())
    assert sorted(got) == ["2/0.1", "2/1.0", "2/None"] and "ours-emulate" in got["2/None"]
    acc = json.loads((tmp_path / "bench_train_accuracy.json").read_text())
    assert sorted(acc) == ["2/mlp/mean", "2/mlp/sum"]
    assert (tmp_path / "out.png").exists() and not (tmp_path / "out.partial.json").exists()


def test_a_run_that_dies_keeps_what_it_measured(tmp_path, monkeypatch, capsys):
    import json
    from inceptionn import cli
    _fake_grid(monkeypatch, fail_at=4)       # the comparison's two, 0.1 Gb/s, then 1 Gb/s
    out = tmp_path / "out.json"
    with pytest.raises(RuntimeError, match="faked"):
        cli.main([*TOY, "--json", str(out)])
    saved = json.loads((tmp_path / "out.partial.json").read_text())
    assert list(saved["results"]) == ["2/0.1"] and len(saved["accuracy"]) == 2
    assert not out.exists() and "the results so far are in" in capsys.readouterr().err


def test_a_partial_run_never_replaces_the_committed_figures(monkeypatch, capsys):
    from inceptionn import cli
    calls = _fake_grid(monkeypatch)
    committed = [train.DEFAULT_JSON, train.DEFAULT_JSON.with_name("bench_train_accuracy.json")]
    before = [p.read_bytes() if p.exists() else None for p in committed]
    for argv in (["--rates", "1"], ["--worlds", "2"], ["--methods", "gloo,ours"],
                 ["--only-compare", "--compare-steps", "mlp:5"]):
        assert cli.main(["bench", "train", *argv]) == 2, argv
        assert "give --json PATH" in capsys.readouterr().err
    assert calls == [] and before == [p.read_bytes() if p.exists() else None for p in committed]
    ap = argparse.ArgumentParser()
    bench_train.add_arguments(ap)
    assert bench_train.partial_options(ap.parse_args([])) == []
    assert bench_train.partial_options(ap.parse_args(["--only-compare"])) == []
    assert bench_train.partial_options(ap.parse_args(["--rates", "1", "--steps", "2"])) == \
        ["steps", "rates"]


def test_the_timed_steps_go_in_rotating_blocks():
    from inceptionn.bench.train_rank import rounds
    plan = rounds(5, 2, ["a", "b", "c"])
    assert plan == [[("a", 2), ("b", 2), ("c", 2)], [("b", 2), ("c", 2), ("a", 2)],
                    [("c", 1), ("a", 1), ("b", 1)]]
    for steps, block in ((8, 2), (7, 3), (1, 4), (60, 2)):
        plan = rounds(steps, block, ["x", "y"])
        for m in "xy":      # every method gets exactly its steps, once per round
            assert sum(n for order in plan for k, n in order if k == m) == steps
        assert all(sorted(k for k, _ in order) == ["x", "y"] for order in plan)
    # block 0, or a single method: one after another, all steps at once
    assert rounds(8, 0, ["x", "y"]) == [[("x", 8), ("y", 8)]]
    assert rounds(8, 2, ["x"]) == [[("x", 8)]]
    with pytest.raises(ValueError):
        rounds(0, 2, ["x"])
