"""`inceptionn bench train` end to end at toy sizes: two ranks in network namespaces, one
limited rate, the accuracy comparison, one step each, real processes and files. Minutes
of both cores (4 min 21 s and 7 min 52 s on a loaded 2-core machine), so not in make test:
INCEPTIONN_TRAIN_E2E=1 (make bench-train-check) runs it; it skips where network
namespaces are missing (root). test_bench_train.py runs the same command line with the
ranks faked, in make test."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(os.environ.get("INCEPTIONN_TRAIN_E2E") != "1",
                                reason="minutes long: INCEPTIONN_TRAIN_E2E=1 (make bench-train-check)")


def test_the_whole_command_at_toy_sizes(tmp_path):
    from inceptionn.drivers.netns import netns_available
    why = netns_available()
    if why:
        pytest.skip(f"needs network namespaces: {why}")
    out = tmp_path / "out.json"
    argv = [sys.executable, "-m", "inceptionn", "bench", "train", "--worlds", "2", "--rates", "1",
            "--nic-rates", "", "--methods", "gloo,ours,ours-ring", "--steps", "3", "--block", "2", "--warmup", "0",
            "--accuracy-steps", "1", "--compare-steps", "mlp:1", "--compare-methods", "gloo,ours",
            "--json", str(out)]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"wrote {out}" in p.stdout and "Targets for IncState()" in p.stdout
    got = json.loads(out.read_text())
    row = got["2/1.0"]
    assert list(got) == ["2/1.0"] and set(row) == {"gloo", "ours", "ours-ring"}
    assert row["ours-ring"]["tx_bytes_per_step"] < row["gloo"]["tx_bytes_per_step"]
    # The default hook was timed after its first decision (each bucket on one path).
    assert sum(row["ours"]["paths"].values()) == row["ours"]["params"], row["ours"]
    assert "Targets for the default hook" in p.stdout
    acc = json.loads((tmp_path / "bench_train_accuracy.json").read_text())
    assert sorted(acc) == ["2/mlp/mean", "2/mlp/sum"]
    assert (tmp_path / "out.png").exists() and not (tmp_path / "out.partial.json").exists()
