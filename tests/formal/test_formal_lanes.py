"""Formal stream contract of the engines' lanes (hw/engine_lanes.py): the turn, the
lanes' FIFOs and width adapters, the order FIFO and the in-order merge, with each lane's
engine replaced by a stand-in that forwards its beats (a 4-entry FIFO with the engine's
ports; the engines themselves are checked by their own wrappers and testbenches), the
FIFOs made small and the beats narrow: two lanes of 8 bits under a 16-bit beat, the
same code as two lanes of 256 bits under 512 (widths and depths are parameters; at
512 bits the RX check took 7 minutes to depth 16, at 16 bits seconds).

With the input obeying the handshake and tkeep rules and the output's ready free:
- the output obeys the handshake and tkeep rules;
- no beat lost, duplicated or reordered across the lanes: the input's byte 0 is its
  beat number, and each output beat must carry the output's beat number; ``last`` and
  ``keep`` come out as they went in (they are functions of the beat number: ``last``
  from a free constant mask, a last beat's ``keep`` a free constant length), so frames
  keep their boundaries and their last beats' bytes through the merge;
- both the RX order (the entry with a frame's first beat; a lane's configuration kept
  until its engine counts the frame, which the stand-in does as the frame's last beat
  leaves it) and the TX order (with its last beat, and a drop bit) are checked, each
  also with the bypass lane: a free bit of each frame's configuration (``dscp``'s
  lowest, sampled with its first beat) sends it to the bypass FIFO, so frames of both
  kinds interleave in every order (TX's dropping of frames longer than the engine keeps,
  thousands of beats here, is tests/test_engine_lanes.py's, with a short limit);
- TX with the short-frame engine too (hw/short_frame.py, a stand-in here: a FIFO of
  whole beats with TX's ports): a one-beat frame whose beat number has bit 1 set (and
  that is not bypassed) goes to it, so frames of all three kinds interleave;
- cover: two frames of two beats out back to back, a beat every clock, which only the
  merge taking the lanes in turn without a gap can give.
"""

import pytest
from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from inceptionn.hw.axis import axis_signature, beat_layout
from inceptionn.hw.compression_engine import CompressionEngine
from inceptionn.hw.decompression_engine import DecompressionEngine
from inceptionn.hw.engine_lanes import EngineLanes
from inceptionn.hw.primitives import StreamFifo
from stream_props import (AnyConst, AnySeq, Assert, Assume, Counter, FormalTop,
                          cover_back_to_back, keep_rule, run, run_bug, slow, source_rule)

pytestmark = pytest.mark.solver      # make formal-quick and make formal, not make test


LANE, BEAT = 8, 16          # bits: two lanes


class StandIn(wiring.Component):
    """The engine's configuration and counter ports (``engine_cls``'s), streams of
    ``bits`` (LANE), its beats forwarded through a FIFO."""

    def __init__(self, engine_cls, bits=LANE):
        self.bits = bits
        super().__init__({**{n: mb for n, mb in engine_cls.__annotations__.items()
                             if isinstance(mb, wiring.Member) and n not in ("i", "o")},
                          "i": In(axis_signature(bits)), "o": Out(axis_signature(bits))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.q = q = StreamFifo(beat_layout(self.bits), 4, fast=True)
        wiring.connect(m, wiring.flipped(self.i), q.i)
        wiring.connect(m, q.o, wiring.flipped(self.o))
        # Counted as its last beat leaves (RX's lanes pop a frame's configuration then).
        with m.If(self.o.valid & self.o.ready & self.o.payload.last):
            m.d.sync += self.frames_in.eq(self.frames_in + 1)
        return m


class LanesCheck(FormalTop):
    def __init__(self, engine_cls, drops, bypass=None, bug=None, short=False):
        self.dut = EngineLanes(None, engine_cls, BEAT, drops=drops, bypass=bypass,
                               until_counted=not drops, fifo_depth=4,
                               order_depth=4, cfg_depth=4, engine=lambda: StandIn(engine_cls),
                               lane_bits=LANE,
                               short=(lambda: StandIn(engine_cls, BEAT), _bit1) if short else None)
        self.bug = bug

    def elaborate(self, platform):
        m = Module()
        self.domain(m)
        m.submodules.dut = dut = self.dut
        i, o = dut.i, dut.o
        n_in = Counter(m, i.valid & i.ready, 8, "n_in").value
        n_out = Counter(m, o.valid & o.ready, 8, "n_out").value
        last_mask = AnyConst(32)
        last_len = AnyConst(1)          # a last beat's bytes - 1

        def last_of(n):
            return last_mask.bit_select(n[:5], 1)

        def keep_of(n):
            return Mux(last_of(n), Mux(last_len, 0b11, 0b01), 0b11)

        m.d.comb += [
            i.valid.eq(AnySeq(1)),
            i.payload.data.eq(n_in),
            i.payload.last.eq(last_of(n_in)),
            i.payload.keep.eq(keep_of(n_in)),
            i.payload.user.eq(0),
            o.ready.eq(AnySeq(1)),
        ]
        for name in ("enable", "dscp"):
            m.d.comb += getattr(dut, name).eq(AnySeq(len(getattr(dut, name))))
        source_rule(m, i, Assume, "i")
        source_rule(m, o, Assert, "o")
        keep_rule(m, o, "o")
        with m.If(o.valid):
            got = o.payload.data[:8]
            if self.bug == "order":
                got = got ^ 1
            m.d.comb += [
                Assert(got == n_out, "beat lost, duplicated or reordered"),
                Assert(o.payload.last == last_of(n_out), "a frame's boundary moved"),
                Assert(o.payload.keep == keep_of(n_out), "a beat's keep changed"),
            ]
        cover_back_to_back(m, o, 2)
        return m


def _odd_dscp(data, cfg):
    return cfg.dscp[0]


def _bit1(data):
    return data[1]


CASES = {"rx": (DecompressionEngine, False, None), "tx": (CompressionEngine, True, None),
         "rx_bypass": (DecompressionEngine, False, _odd_dscp),
         "tx_bypass": (CompressionEngine, True, _odd_dscp),
         "tx_short": (CompressionEngine, True, _odd_dscp, True)}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_lanes_order_bmc(kind):
    cls, drops, bypass, *short = CASES[kind]
    # Three sources make the short lane's check the slowest by far (idle: 6 s to depth
    # 12, 17 s to 14, 189 s to 16, against about 10 s to 16 for the others): 12 in
    # make formal-quick, 16 in make formal.
    run(LanesCheck(cls, drops, bypass, short=bool(short)), f"lanes_{kind}_order", mode="bmc",
        depth=slow(12, 16) if short else slow(16, 28))


def test_short_lane_order_bug_is_found():
    run_bug(LanesCheck(CompressionEngine, True, _odd_dscp, bug="order", short=True),
            "lanes_tx_short_order_bug", 12, "beat lost, duplicated or reordered")


def test_bypass_lane_order_bug_is_found():
    cls, drops, bypass, *_ = CASES["rx_bypass"]
    run_bug(LanesCheck(cls, drops, bypass, bug="order"), "lanes_rx_bypass_order_bug", 12,
            "beat lost, duplicated or reordered")


def test_lanes_order_bug_is_found():
    cls, drops, *_ = CASES["tx"]
    run_bug(LanesCheck(cls, drops, bug="order"), "lanes_tx_order_bug", 12,
            "beat lost, duplicated or reordered")


@pytest.mark.parametrize("kind", ["rx", "rx_bypass"])
def test_lanes_back_to_back_cover(kind):
    cls, drops, bypass, *_ = CASES[kind]
    res = run(LanesCheck(cls, drops, bypass), f"lanes_{kind}_cover", mode="cover",
              depth=slow(24, 28))
    assert res.traces, res.summary()
