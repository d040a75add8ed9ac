"""`inceptionn bench collectives`'s model and targets (no network: synthetic rows).

The model's wire term is the busiest port's bytes: the exchange is pipelined over full
duplex links, so WA+C, whose aggregator still sends p uncompressed replies, is predicted
no faster than WA, while INC+C is predicted faster than INC by its wire ratio."""

import math

from inceptionn.commands import bench_collectives as bc

N = 3_200_000
COEF = (0.004, 8 / 0.05e9, 2e-9)      # alpha 4 ms, the wire at 0.05 Gb/s, gamma


def _row(mode, p, busiest, n=N, seconds=None):
    pt = bc.Point(mode, p, n, 0.0, 0.0, 0.0, 0.9, busiest, 0.05)
    pt.seconds = seconds if seconds is not None else float(sum(
        c * t for c, t in zip(COEF, bc._terms(pt))))
    return pt


def _rows():
    out = []
    for p in (2, 4, 8):
        ring = 2 * (p - 1) / p * N
        out += [_row("WA", p, p * N), _row("WA+C", p, p * N),
                _row("INC", p, ring), _row("INC+C", p, ring / 5)]
    return out


def test_the_fit_recovers_the_coefficients_from_the_uncompressed_rows():
    pts = _rows()
    a, b, g = bc.fit_model(pts)
    assert math.isclose(b, COEF[1], rel_tol=1e-6) and math.isclose(a, COEF[0], rel_tol=1e-4)
    assert math.isclose(g, COEF[2], rel_tol=1e-3)


def test_targets_on_rows_that_follow_the_model():
    pts = _rows()
    coef = bc.fit_model(pts)
    for pt in pts:
        pt.model = sum(c * t for c, t in zip(coef, bc._terms(pt)))
    lines = bc.verdicts(pts)
    assert all(met for met, _ in lines), lines
    text = "\n".join(line for _, line in lines)
    assert "WA+C P = 8 3.2 MB: model predicts no gain over WA" in text
    assert "INC+C P = 8 3.2 MB: model " in text and "12 of 12 rows within 25%" in text


def test_a_compressed_row_slower_than_its_twin_or_off_the_model_is_missed():
    pts = _rows()
    coef = bc.fit_model(pts)
    slow = next(pt for pt in pts if pt.mode == "INC+C" and pt.p == 8)
    twin = next(pt for pt in pts if pt.mode == "INC" and pt.p == 8)
    slow.seconds = twin.seconds * 1.1          # the old CPU-bound switch: INC+C behind INC
    for pt in pts:
        pt.model = sum(c * t for c, t in zip(coef, bc._terms(pt)))
    missed = [line for met, line in bc.verdicts(pts) if not met]
    # Its twin and the model; against WA (8 n on the aggregator's link) it still wins.
    assert len(missed) == 2, missed
    assert any(line.startswith("INC+C P = 8 3.2 MB: model") for line in missed)
    assert any("11 of 12 rows within 25%" in line for line in missed)
