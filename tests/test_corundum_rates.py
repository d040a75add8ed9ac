"""The rates benchmarks' common part (hw/corundum/tb/inceptionn_rates.py, run inside
Corundum's testbenches under cocotb 1.8): its frames and its arithmetic, here without
Corundum or a simulator (Corundum's driver model, which the gradient suite imports, is a
stand-in module)."""

import importlib
import sys
import types
from pathlib import Path

import pytest

from inceptionn.golden import TOS_DEFAULT
from inceptionn.rtl import rtl_golden

TB = Path(__file__).resolve().parent.parent / "hw/corundum/tb"


@pytest.fixture()
def rates(monkeypatch):
    monkeypatch.setitem(sys.modules, "mqnic", types.ModuleType("mqnic"))
    monkeypatch.syspath_prepend(str(TB))
    for name in ("inceptionn_rates", "inceptionn_suite"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield importlib.import_module("inceptionn_rates")
    for name in ("inceptionn_rates", "inceptionn_suite"):
        sys.modules.pop(name, None)


@pytest.mark.parametrize("size", [1514, 9014])
def test_frames_are_gradient_frames_of_that_size(rates, size):
    frame = rates.gradient_frame(size, 100)
    assert len(frame) == size and frame[15] == TOS_DEFAULT and frame[23] == 6     # ToS, TCP
    assert len(rtl_golden.tx_frame(frame, k=10, codec="bounded")) < size // 2      # compressed
    assert frame != rates.gradient_frame(size, 101)


def test_the_sume_benchmark_keeps_its_frames(rates):
    suite = sys.modules["inceptionn_suite"]
    assert rates.gradient_frame(1502, 7) == suite.gradient_frames(7)[0]
    with pytest.raises(ValueError, match="whole float32"):
        rates.gradient_frame(1513, 1)


def test_the_block_figures(rates):
    # Two frames: in at clocks 10-13 and 14-17, out at 20-21 and 23-24 (one clock stalled).
    events = {"s": {"first": [10, 14], "last": [13, 17], "beats": 8, "beats_before": [0, 4],
                    "stalled": 0},
              "m": {"first": [20, 23], "last": [21, 24], "beats": 4, "beats_before": [0, 2],
                    "stalled": 1}}
    got = rates.summarize(events, 2)
    assert got["in_beats_per_clock"] == 1.0 and got["out_beats_per_clock"] == 0.8
    assert got["out_beats_per_clock_from_frame_2"] == 1.0 and got["out_clocks_from_frame_2"] == 2
    assert got["latency_first_in_to_first_out"] == [9, 10]
    assert got["latency_last_in_to_first_out"] == [6, 7]
    assert got["latency_first_frame"] == [10, 7] and got["out_not_taken_clocks"] == 1
    with pytest.raises(AssertionError, match="2 frames into the block, 2 out, 3 sent"):
        rates.summarize(events, 3)


def test_wire_accounting(rates):
    mac = rates.Wire(None, None, 100e9, preamble=8, fcs=0, gap=12, name="100G")
    # Back to back at the line rate: N frames, N preambles, N - 1 gaps fill the window.
    sizes = [1514] * 16
    seconds = (16 * (1514 + 8) + 15 * 12) * 8 / 100e9
    assert mac.window_bits(sizes) / seconds == pytest.approx(100e9)
    # A real line carries the FCS too: 1538 byte times a frame.
    assert mac.line_frames_per_s(1514) == pytest.approx(100e9 / (8 * 1538))
