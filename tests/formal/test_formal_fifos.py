"""Formal stream contract of the FIFOs and register slices the engines are built from:
StreamFifo (FastFifo and SyncFIFOBuffered inside) at every (depth, fast) the engines use,
FifoSlice, AxisRegisterSlice.

Properties, with the input obeying the handshake rule and the output's ready free:
- the output obeys the handshake rule;
- no beat lost, duplicated or reordered: the input's payload is its beat number (the
  FIFOs never look at the payload, so one narrow payload stands for every width), and
  each output beat must carry the output beat number; the payload is as wide as needed
  for a lost or extra beat to show within the FIFO's occupancy;
- occupancy (beats in minus beats out) never exceeds the storage, and ``o.valid`` is low
  when it is zero;
- capacity: while fewer than ``ready_below`` beats are inside, ``i.ready`` is high: the
  sizing arguments of the stages that write without a ready check rest on it;
- liveness: a beat inside reaches ``o.valid`` within ``latency`` clocks;
- the FIFO's own held count (``formal_level``, driven only for formal) is in - out.

With a free reset (any clock, mid-stream) the same control properties hold from each
reset on (the wrapper's counters reset with the FIFO).

The control properties (handshake, occupancy, capacity, liveness) are proved by
k-induction; the payload order is a bounded check (its induction needs the RAM's contents
as an invariant), to a depth that walks the pointers around the ring twice.
"""

import pytest
from amaranth import *

from inceptionn.hw.primitives import AxisRegisterSlice, FastFifo, FifoSlice, StreamFifo
from stream_props import (DEEP, SLOW, AnySeq, Assert, Assume, Counter, FormalTop, run,
                          source_rule)

pytestmark = pytest.mark.solver      # make formal-quick and make formal, not make test

# (depth, fast) of every StreamFifo the engines instantiate (hw/compression_engine.py,
# hw/decompression_engine.py; FifoSlice is (4, fast)), and egress's SyncFIFOBuffered (8).
ENGINE_FIFOS = [(4, True), (32, True), (4, False), (8, False), (16, False)]


def fifo_params(depth, fast):
    """(ready_below, max_inside, latency) of a StreamFifo: FastFifo keeps one entry
    spare (its w_rdy is a clock late) and holds one more in its output register."""
    if fast:
        return depth - 1, depth + 1, 2
    return depth, depth, 2


class FifoCheck(FormalTop):
    def __init__(self, dut, *, ready_below, max_inside, latency, order=True, reset=False):
        self.dut = dut
        # reset: a free reset, any clock (mid-stream); it clears the wrapper's counters
        # and registers with the FIFO's, so every property restarts with it.
        self.reset = reset
        self.ready_below, self.max_inside, self.latency = ready_below, max_inside, latency
        self.order = order

    def elaborate(self, platform):
        m = Module()
        if self.reset:
            self.rst = Signal(name="rst_any")
            m.d.comb += self.rst.eq(AnySeq(1))
        self.domain(m)
        m.submodules.dut = dut = self.dut
        width = len(Value.cast(dut.i.payload))
        fin = dut.i.valid & dut.i.ready
        fout = dut.o.valid & dut.o.ready
        n_in = Counter(m, fin, 8, "n_in").value
        n_out = Counter(m, fout, 8, "n_out").value
        inside = Signal(8)
        m.d.comb += inside.eq(n_in - n_out)

        # Environment: valid free but held until accepted; payload = beat number.
        valid = Signal()
        m.d.comb += [valid.eq(AnySeq(1)), dut.i.valid.eq(valid), dut.i.payload.eq(n_in),
                     dut.o.ready.eq(AnySeq(1))]
        source_rule(m, dut.i, Assume, "i")

        source_rule(m, dut.o, Assert, "o")
        m.d.comb += Assert(inside <= self.max_inside, "more beats inside than storage")
        # The FIFO's own count of what it holds is beats in minus beats out (the
        # inductive invariant that ties the wrapper's counters to the pointers).
        m.d.comb += Assert(inside == dut.formal_level, "held count differs from in - out")
        with m.If(inside == 0):
            m.d.comb += Assert(~dut.o.valid, "output valid with nothing inside")
        with m.If(inside < self.ready_below):
            m.d.comb += Assert(dut.i.ready, "not ready below the stated capacity")
        waiting = Signal(8)
        with m.If((inside != 0) & ~dut.o.valid):
            m.d.sync += waiting.eq(waiting + 1)
        with m.Else():
            m.d.sync += waiting.eq(0)
        m.d.comb += Assert(waiting < self.latency, "a beat inside did not reach o.valid")
        if self.order:
            with m.If(dut.o.valid):
                m.d.comb += Assert(Value.cast(dut.o.payload) == n_out[:width],
                                   "beat lost, duplicated or reordered")
        return m


def _width(max_inside):
    """Payload bits for the beat-number argument: an error shows as a different number
    while at most max_inside beats are inside."""
    return (max_inside + 1).bit_length() + 1


def _fifo(depth, fast, cls=StreamFifo):
    _, max_inside, _ = fifo_params(depth, fast)
    return cls(_width(max_inside), depth, fast=fast)


# ---- proofs ---------------------------------------------------------------------------

@pytest.mark.parametrize("depth,fast", ENGINE_FIFOS)
def test_stream_fifo_control_induction(depth, fast):
    rb, mx, lat = fifo_params(depth, fast)
    top = FifoCheck(_fifo(depth, fast), ready_below=rb, max_inside=mx, latency=lat,
                    order=False)
    run(top, f"fifo_d{depth}_{'fast' if fast else 'buf'}_prove", mode="prove", depth=4)


@pytest.mark.parametrize("depth,fast", ENGINE_FIFOS)
def test_stream_fifo_order_bmc(depth, fast):
    rb, mx, lat = fifo_params(depth, fast)
    if depth > 4 and not SLOW:
        pytest.skip("ring walks past depth 4 take minutes: make formal (INCEPTIONN_FORMAL=1)")
    top = FifoCheck(_fifo(depth, fast), ready_below=rb, max_inside=mx, latency=lat)
    # Twice around the pointer ring plus a fill (every pointer / occupancy pair) up to
    # depth 8; the 16- and 32-entry FIFOs (the same code) to 34 clocks, a fill and a
    # drain of 16 (make formal-deep: 40; 5 to 8 min each idle, past make formal's
    # per-task budget on a loaded machine).
    run(top, f"fifo_d{depth}_{'fast' if fast else 'buf'}_order", mode="bmc",
        depth=4 * depth + 4 if depth <= 8 else (40 if DEEP else 34))


@pytest.mark.parametrize("depth,fast", [(4, True), (8, False)])
def test_stream_fifo_reset_mid_stream_induction(depth, fast):
    rb, mx, lat = fifo_params(depth, fast)
    top = FifoCheck(_fifo(depth, fast), ready_below=rb, max_inside=mx, latency=lat,
                    order=False, reset=True)
    run(top, f"fifo_d{depth}_{'fast' if fast else 'buf'}_reset_prove", mode="prove", depth=4)


def test_fifo_slice_order_bmc():
    top = FifoCheck(FifoSlice(5), ready_below=3, max_inside=5, latency=2)
    run(top, "fifo_slice_order", mode="bmc", depth=20)


def test_axis_register_slice():
    dut = AxisRegisterSlice(unsigned(3))
    top = FifoCheck(dut, ready_below=2, max_inside=2, latency=1, order=False)
    run(top, "axis_slice_prove", mode="prove", depth=4)
    top = FifoCheck(AxisRegisterSlice(unsigned(3)), ready_below=2, max_inside=2, latency=1)
    run(top, "axis_slice_order", mode="bmc", depth=16)


# ---- each property can fail: injected bugs ----------------------------------------------

class DroppedReady(StreamFifo):
    """Bug: the writer side ignores the FIFO's ready (a write strobe into a full FIFO)."""

    def elaborate(self, platform):
        m = Module()
        width = Shape.cast(self.shape).width
        m.submodules.fifo = fifo = FastFifo(width, self.depth)
        m.d.comb += [
            fifo.w_en.eq(self.i.valid), fifo.w_data.eq(self.i.payload),
            self.i.ready.eq(1),
            self.o.valid.eq(fifo.r_rdy), self.o.payload.eq(fifo.r_data),
            fifo.r_en.eq(self.o.ready),
        ]
        m.d.comb += self.formal_level.eq(fifo.formal_level)
        return m


class ValidWithoutReady(StreamFifo):
    """Bug: the output drops valid while stalled (valid pulses, ignoring o.ready)."""

    def elaborate(self, platform):
        m = Module()
        width = Shape.cast(self.shape).width
        m.submodules.fifo = fifo = FastFifo(width, self.depth)
        toggle = Signal()
        m.d.sync += toggle.eq(~toggle)
        m.d.comb += [
            fifo.w_en.eq(self.i.valid), fifo.w_data.eq(self.i.payload),
            self.i.ready.eq(fifo.w_rdy),
            self.o.valid.eq(fifo.r_rdy & toggle), self.o.payload.eq(fifo.r_data),
            fifo.r_en.eq(self.o.ready & toggle),
        ]
        m.d.comb += self.formal_level.eq(fifo.formal_level)
        return m


def test_bug_dropped_ready_found():
    top = FifoCheck(DroppedReady(4, 4, fast=True), ready_below=3, max_inside=5, latency=2)
    res = run(top, "bug_fifo_dropped_ready", mode="bmc", depth=14, expect="FAIL")
    assert any("held count differs" in f or "lost" in f for f in res.failed), res.failed


def test_bug_shallower_fifo_found():
    # A FIFO one entry shallower than the depth its users count on (buffered: depth-1;
    # a FastFifo's depth is a power of two, so half).
    top = FifoCheck(StreamFifo(4, 7), ready_below=8, max_inside=8, latency=2, order=False)
    res = run(top, "bug_fifo_shallow_buf", mode="bmc", depth=12, expect="FAIL")
    assert any("capacity" in f for f in res.failed), res.failed
    top = FifoCheck(StreamFifo(4, 2, fast=True), ready_below=3, max_inside=5, latency=2,
                    order=False)
    res = run(top, "bug_fifo_shallow_fast", mode="bmc", depth=12, expect="FAIL")
    assert any("capacity" in f for f in res.failed), res.failed


def test_bug_output_valid_dropped_found():
    top = FifoCheck(ValidWithoutReady(4, 4, fast=True), ready_below=3, max_inside=5,
                    latency=3, order=False)
    res = run(top, "bug_fifo_valid_dropped", mode="bmc", depth=10, expect="FAIL")
    assert any("valid dropped" in f for f in res.failed), res.failed
