"""Both engines whole, bounded: with the input obeying AXI-stream (valid and payload held
until ready; tkeep full before the last beat, contiguous and non-empty on it) and any
configuration and output ready, the output obeys the handshake rule and the same tkeep
rule, and frames are never duplicated (last beats out + frames dropped <= last beats in).

These are bounded model checks from reset: the engines' latency (a TX frame's first
output beat comes about 50 clocks after its last input beat; RX is cut-through behind a
few header beats) means short depths only check that nothing comes out of nothing; the
covers say how deep a first output frame is. The designs' own formal asserts (egress
room, counts) are checked here too, in the engine's context. See docs/verification.md
for the depths reached and their solver times.
"""

import pytest
from amaranth import *

from inceptionn.hw.compression_engine import CompressionEngine
from inceptionn.hw.decompression_engine import DecompressionEngine
from stream_props import (SLOW, AnySeq, Assert, Assume, Counter, Cover, FormalTop, run, slow,
                          source_rule)
from test_formal_tx_stages import keep_rule


def assume_keep(m, port):
    beat = port.payload
    k = beat.keep
    with m.If(port.valid):
        with m.If(~beat.last):
            m.d.comb += Assume(k == (1 << len(k)) - 1)
        with m.Else():
            m.d.comb += [Assume(k != 0), Assume((k & (k + 1)) == 0)]


class EngineCheck(FormalTop):
    def __init__(self, engine, *, cover=None, reset=False):
        self.engine, self.cover, self.reset = engine, cover, reset

    def elaborate(self, platform):
        m = Module()
        if self.reset:
            # Reset at any clock, mid-frame included; the wrapper's counters reset too.
            self.rst = Signal(name="rst_any")
            m.d.comb += self.rst.eq(AnySeq(1))
        self.domain(m)
        m.submodules.dut = dut = self.engine
        m.d.comb += [dut.i.valid.eq(AnySeq(1)),
                     dut.i.payload.eq(AnySeq(len(dut.i.payload.as_value()))),
                     dut.o.ready.eq(AnySeq(1)), dut.enable.eq(AnySeq(1)),
                     dut.dscp.eq(AnySeq(6))]
        if hasattr(dut, "k"):
            m.d.comb += dut.k.eq(AnySeq(7))
        if hasattr(dut, "codec"):            # wire format version, any frame
            m.d.comb += dut.codec.eq(AnySeq(len(dut.codec)))
        source_rule(m, dut.i, Assume, "i")
        assume_keep(m, dut.i)
        source_rule(m, dut.o, Assert, "o")
        keep_rule(m, dut.o, "o")
        lasts_in = Counter(m, dut.i.valid & dut.i.ready & dut.i.payload.last, 8, "lasts_in").value
        o_last = dut.o.valid & dut.o.ready & dut.o.payload.last
        lasts_out = Counter(m, o_last, 8, "lasts_out").value
        dropped = getattr(dut, "dropped", C(0, 8))
        m.d.comb += Assert(lasts_out + dropped[:8] <= lasts_in,
                           "engine: more frames out than in")
        if self.cover == "frame_out":
            m.d.comb += Cover(o_last)
        elif self.cover == "malformed":
            m.d.comb += Cover(dut.malformed != 0)
        return m


# Converting an engine alone takes tens of seconds: every engine check is make formal's.
pytestmark = pytest.mark.skipif(not SLOW, reason="engines whole: make formal (INCEPTIONN_FORMAL=1)")


def test_rx_engine_bmc():
    run(EngineCheck(DecompressionEngine()), "rx_engine_bmc", mode="bmc", depth=20, script=[])


def test_rx_engine_reset_bmc():
    run(EngineCheck(DecompressionEngine(), reset=True), "rx_engine_reset_bmc", mode="bmc",
        depth=16, script=[])


def test_tx_engine_bmc():
    run(EngineCheck(CompressionEngine(512)), "tx_engine_bmc", mode="bmc", depth=12,
        script=[])


def test_rx_engine_cover_frame_out():
    # Non-vacuity: an output frame within the depth (the trace is kept as a VCD).
    run(EngineCheck(DecompressionEngine(), cover="frame_out"), "rx_engine_cover_frame",
        mode="cover", depth=20, script=[])


def test_rx_engine_cover_malformed():
    # A malformed compressed frame decided by the RX engine (its counter moves).
    run(EngineCheck(DecompressionEngine(), cover="malformed"), "rx_engine_cover_malformed",
        mode="cover", depth=30, script=[])
