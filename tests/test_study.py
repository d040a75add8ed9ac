"""The study's reduced run (one seed, few steps): the direction of every claim, with a
margin that can fail. `make study` runs the full version into docs/results.md."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from study import experiments as E  # noqa: E402
from study.report import write  # noqa: E402


@pytest.fixture(scope="module")
def res():
    return {name: fn(E.QUICK, None) for name, fn in E.EXPERIMENTS.items()}


def _by(rows, method):
    return next(r for r in rows if r["method"] == method)


def test_table3_two_bit_share_grows_as_the_bound_relaxes(res):
    rows = {r["bound"]: r["ours"] for r in res["table3"]}
    for shares in rows.values():
        assert abs(sum(shares) - 100) < 1e-6
    assert rows["2^-6"][0] > rows["2^-8"][0] + 5 > rows["2^-10"][0] + 10


def test_fig14_inc_compresses_more_than_truncation_keeps_accuracy(res):
    f = res["fig14"]
    base = _by(f, "base (float32 ring)")
    assert _by(f, "INC 2^-6")["ratio"] > _by(f, "24b-T")["ratio"] >= 3.99
    assert _by(f, "INC 2^-10")["accuracy"] > _by(f, "24b-T")["accuracy"] + 0.1
    assert _by(f, "INC 2^-10")["accuracy"] > base["accuracy"] - 0.1


def test_terngrad_bytes_and_accuracy(res):
    t = [r for r in res["terngrad"] if r["data"] == "digits"]
    dense, tern = _by(t, "dense SGD"), _by(t, "TernGrad")
    assert tern["ratio"] > 7.5                       # 2 bits in an all-gather vs a float ring
    assert tern["accuracy"] > dense["accuracy"] - 0.15


def test_gtopk_bytes_grow_as_log_p_topk_as_p(res):
    g = {r["P"]: r for r in res["gtopk_bytes"]}
    assert g[16]["gtopk_sent"] == 4 * g[2]["gtopk_sent"]          # log2 16 / log2 2
    assert g[16]["topk_sent"] == 15 * g[2]["topk_sent"]           # P - 1
    assert g[16]["topk_sent"] > 3 * g[16]["gtopk_sent"]


def test_scalecom_and_shared_seed_bytes_stay_flat(res):
    s = [r["scalecom"] for r in res["scalecom_bytes"]]
    assert max(s) / min(s) < 1.5 and res["scalecom_bytes"][-1]["topk"] > 10 * s[-1]
    rb = res["random_block_bytes"]
    assert rb[-1]["allgather"] / rb[0]["allgather"] > 10 > rb[-1]["allreduce"] / rb[0]["allreduce"]


def test_report_writes_every_section(res, tmp_path):
    out = tmp_path / "results.md"
    write(res, E.QUICK, 1.0, out)
    text = out.read_text()
    for head in ("Table III", "Fig. 14", "TernGrad", "gTop-k", "Random-block", "ScaleCom", "Summary"):
        assert f"## " in text and head in text
    assert (tmp_path / "img" / "study.png").stat().st_size > 10_000
