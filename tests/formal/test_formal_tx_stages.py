"""Formal checks of the TX stages that write streams without a ready check.

- egress: outq (8 entries) is never written full (the registered room flag keeps a
  clock of slack), its beat count never wraps; its output obeys the handshake rule and
  tkeep is full on every beat but the last and contiguous and non-empty on the last;
  one last beat per descriptor that is not dropped; with the output always ready, a
  descriptor's beats leave within nbeats + 5 clocks. The design's own asserts (under
  the formal platform) state the inductive invariants; proved by k-induction.
- dispatcher: its outputs' valid are write strobes: each is high only with its ready
  (proved by induction; the stage has no state).
- ingress: infoq and cfgq (32-entry FastFifos) are written without a ready check; the
  argument is that a frame's entries wait there only while its beats are in beatq (16).
  Checked with the engine's wiring of ingress, beatq, infoq and cfgq and an abstract
  environment: the dispatcher pops infoq and cfgq together at any time; the front reads
  beatq only for frames already dispatched. Bounded check (the counting argument needs
  the frame structure of beatq's contents, which k-induction does not see).
"""

import pytest
from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFOBuffered

from inceptionn.hw.axis import AxisBeat
from inceptionn.hw.packet_matcher import MatchInfo
from inceptionn.hw.primitives import StreamFifo
from inceptionn.hw.tx.dispatcher import Dispatcher
from inceptionn.hw.tx.egress import Egress
from inceptionn.hw.tx.finisher import Finisher
from inceptionn.hw.tx.ingress import Ingress
from inceptionn.hw.tx.layouts import MODE_DROP, MODE_PASS, FrameCfg
from inceptionn.hw.wire import MAX_FRAME_BEATS
from stream_props import (AnySeq, Assert, Assume, Counter, Cover, FormalTop, cover_back_to_back,
                          keep_rule, past, run, run_bug, slow, slow_only, source_rule, from_step)

pytestmark = pytest.mark.solver      # make formal-quick and make formal, not make test


# ---- egress ---------------------------------------------------------------------------

class EgressCheck(FormalTop):
    def __init__(self, aw=4, always_ready=False, *, live_bound=MAX_FRAME_BEATS + 5,
                 finisher_bug=False):
        self.aw, self.always_ready = aw, always_ready
        # For the tests that show these properties can fail: a tighter wait bound than
        # the egress can meet, and descriptors with 0 bytes in the last beat (a finisher
        # that breaks its contract).
        self.live_bound, self.finisher_bug = live_bound, finisher_bug

    def elaborate(self, platform):
        m = Module()
        self.domain(m)
        m.submodules.dut = dut = self.dut_ref = Egress(self.aw)
        d = dut.desc
        # Descriptors as the finisher makes them: 1..MAX_FRAME_BEATS beats, 1..32 bytes in
        # the last, held until taken.
        m.d.comb += [d.valid.eq(AnySeq(1)), d.payload.eq(AnySeq(len(Value.cast(d.payload)))),
                     dut.orig.r_data.eq(AnySeq(256)), dut.comp.r_data.eq(AnySeq(256)),
                     dut.o.ready.eq(1 if self.always_ready else AnySeq(1))]
        with m.If(d.valid):
            m.d.comb += [Assume((d.payload.nbeats >= 1) & (d.payload.nbeats <= MAX_FRAME_BEATS)),
                         Assume((d.payload.last_bytes >= int(not self.finisher_bug)) &
                                (d.payload.last_bytes <= 32)),
                         Assume(d.payload.mode <= 2)]
        source_rule(m, d, Assume, "desc")
        source_rule(m, dut.o, Assert, "o")
        if self.always_ready:
            # On outq's output: its RAM's contents are free in an induction step.
            keep_rule(m, dut.o, "o")
        take = d.valid & d.ready
        sent = Counter(m, take & (d.payload.mode != MODE_DROP), 8, "sent").value
        lasts = Counter(m, dut.o.valid & dut.o.ready & dut.o.payload.last, 8, "lasts").value
        # Frames out never run ahead of the descriptors that send frames, and at most
        # the one being issued plus those in the pipeline and outq are behind.
        if self.always_ready:        # a counting argument: bounded check only
            m.d.comb += Assert((sent - lasts)[:8] <= 10, "egress: more last beats than frames")
        if self.always_ready:
            # Liveness: with the output always ready, no descriptor's beats wait: the
            # clocks since the current descriptor was loaded stay within nbeats + 5.
            age = Signal(10)
            busy = Signal()
            with m.If(take):
                m.d.sync += [age.eq(0), busy.eq(d.payload.mode != MODE_DROP)]
            with m.Elif(busy):
                m.d.sync += age.eq(age + 1)
            with m.If(dut.o.valid & dut.o.payload.last):
                m.d.sync += busy.eq(0)
            m.d.comb += Assert(age <= self.live_bound, "egress: a frame waits too long")
        return m


def test_egress_outq_never_overflows_induction():
    run(EgressCheck(), "tx_egress_prove", mode="prove", depth=slow(6, 10), script=[])


def test_egress_liveness_bmc():
    run(EgressCheck(always_ready=True), "tx_egress_live", mode="bmc", depth=slow(12, 20),
        script=[])


class ShallowOutq(Elaboratable):
    """Bug: outq holds 4 beats but tells the egress it holds 8 (a FIFO shallower than
    the depth its writer counts on)."""

    def __init__(self, width, depth):
        self.inner = SyncFIFOBuffered(width=width, depth=depth // 2)
        self.depth = depth
        for n in ("w_en", "w_data", "w_rdy", "r_en", "r_data", "r_rdy", "level"):
            setattr(self, n, getattr(self.inner, n))

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = self.inner
        return m


def test_bug_egress_shallow_outq_found():
    import inceptionn.hw.tx.egress as eg
    real = eg.add_fifo

    def shallow(m, name, shape, depth, fast=False):
        m.submodules[name] = f = ShallowOutq(Shape.cast(shape).width, depth)
        return f
    eg.add_fifo = shallow
    try:
        res = run(EgressCheck(), "bug_tx_egress_shallow_outq", mode="bmc", depth=10,
                  script=[], expect="FAIL")
    finally:
        eg.add_fifo = real
    assert any("outq written while full" in f or "occ is not" in f for f in res.failed), \
        res.failed


# ---- dispatcher -----------------------------------------------------------------------

class DispatcherCheck(FormalTop):
    def __init__(self, dropped_ready=None):
        # dropped_ready: the output whose FIFO ready is not wired to the dispatcher (it
        # sees 1): the bug the strobe assertion must catch.
        self.dropped_ready = dropped_ready

    def elaborate(self, platform):
        m = Module()
        self.domain(m)
        m.submodules.dut = dut = Dispatcher()
        for port in (dut.info, dut.cfg):
            m.d.comb += [port.valid.eq(AnySeq(1)),
                         port.payload.eq(AnySeq(len(Value.cast(port.payload))))]
        for name in ("mode", "rl_cfg", "k", "shim"):
            port = getattr(dut, name)
            fifo_ready = Signal(name=f"{name}_fifo_ready")
            m.d.comb += fifo_ready.eq(AnySeq(1))
            m.d.comb += port.ready.eq(1 if name == self.dropped_ready else fifo_ready)
            m.d.comb += Assert(~port.valid | fifo_ready, "dispatcher: strobe without ready")
        # info and cfg are popped together, one frame each
        m.d.comb += Assert(dut.info.ready == dut.cfg.ready, "dispatcher: info/cfg out of step")
        with m.If(dut.info.ready):
            m.d.comb += Assert(dut.info.valid & dut.cfg.valid, "dispatcher: pop of an empty FIFO")
        return m


def test_bug_egress_wait_bound_found():
    # The liveness assertion is live: a bound of 3 clocks is broken by any frame of 3
    # beats or more.
    res = run(EgressCheck(always_ready=True, live_bound=3), "bug_tx_egress_wait_bound",
              mode="bmc", depth=10, script=[], expect="FAIL")
    assert any("waits too long" in f for f in res.failed), res.failed


def test_bug_egress_empty_last_beat_found():
    res = run(EgressCheck(always_ready=True, finisher_bug=True), "bug_tx_egress_empty_last",
              mode="bmc", depth=10, script=[], expect="FAIL")
    assert any("empty last beat" in f for f in res.failed), res.failed


def test_dispatcher_strobes_induction():
    run(DispatcherCheck(), "tx_dispatcher_prove", mode="prove", depth=2, script=[])


def test_bug_dispatcher_dropped_ready_found():
    res = run(DispatcherCheck(dropped_ready="k"), "bug_tx_dispatcher_dropped_ready",
              mode="bmc", depth=4, script=[], expect="FAIL")
    assert any("strobe without ready" in f for f in res.failed), res.failed


# ---- ingress + beatq + infoq + cfgq ---------------------------------------------------

class IngressCheck(FormalTop):
    def __init__(self, beatq_depth=16, infoq_depth=32, cover=False):
        self.beatq_depth, self.infoq_depth, self.cover = beatq_depth, infoq_depth, cover

    def elaborate(self, platform):
        m = Module()
        self.domain(m)
        m.submodules.ingress = ing = Ingress(4)
        # The engine's wiring (hw/compression_engine.py): beatq [16], infoq and cfgq [32*].
        m.submodules.beatq = beatq = StreamFifo(AxisBeat, self.beatq_depth)
        m.submodules.infoq = infoq = StreamFifo(MatchInfo, self.infoq_depth, fast=True)
        m.submodules.cfgq = cfgq = StreamFifo(FrameCfg, self.infoq_depth, fast=True)
        wiring.connect(m, ing.beats, beatq.i)
        wiring.connect(m, ing.info, infoq.i)
        wiring.connect(m, ing.cfg, cfgq.i)
        # Input: any beats (the matcher parses whatever arrives), held until taken.
        m.d.comb += [ing.i.valid.eq(AnySeq(1)), ing.i.payload.eq(AnySeq(len(ing.i.payload.as_value()))),
                     ing.store.w_room.eq(AnySeq(1)), ing.store.wp.eq(AnySeq(5)),
                     ing.enable.eq(AnySeq(1)), ing.k.eq(AnySeq(7)), ing.dscp.eq(AnySeq(6))]
        if hasattr(ing, "codec"):            # wire format version, per frame
            m.d.comb += ing.codec.eq(AnySeq(len(ing.codec)))
        source_rule(m, ing.i, Assume, "i")
        # Dispatcher: pops one info and one cfg together, whenever it likes.
        disp = Signal()
        m.d.comb += [disp.eq(AnySeq(1) & infoq.o.valid & cfgq.o.valid),
                     infoq.o.ready.eq(disp), cfgq.o.ready.eq(disp)]
        dispatched = Counter(m, disp, 8, "dispatched").value
        # Front: reads beatq only for a frame already dispatched.
        read_frames = Counter(m, beatq.o.valid & beatq.o.ready & beatq.o.payload.last, 8,
                              "read_frames").value
        m.d.comb += beatq.o.ready.eq(AnySeq(1) & (dispatched != read_frames))

        m.d.comb += [
            Assert(~ing.info.valid | ing.info.ready, "ingress: infoq written while full"),
            Assert(~ing.cfg.valid | ing.cfg.ready, "ingress: cfgq written while full"),
        ]
        # The tight bound behind the sizing: one cfg entry per frame with a beat in beatq.
        m.d.comb += Assert(cfgq.formal_level <= self.beatq_depth, "ingress: cfgq above beatq's depth")
        if self.cover:
            m.d.comb += Cover(cfgq.formal_level == self.beatq_depth)
        return m


def test_ingress_info_cfg_never_overflow_bmc():
    run(IngressCheck(), "tx_ingress_bmc", mode="bmc", depth=slow(12, 22), script=[])


def test_ingress_bound_reached_cover():
    # The bound is tight: 16 one-beat frames wait in beatq for the dispatcher.
    slow_only("the 17-clock cover")
    run(IngressCheck(cover=True), "tx_ingress_cover_full", mode="cover", depth=20, script=[])


def test_bug_ingress_shallow_infoq_found():
    # infoq/cfgq of 8 entries (7 usable) behind a 16-beat beatq: 8 one-beat frames
    # waiting for the dispatcher overflow them.
    top = IngressCheck(infoq_depth=8)
    res = run(top, "bug_tx_ingress_shallow", mode="bmc", depth=14, script=[], expect="FAIL")
    assert any("written while full" in f for f in res.failed), res.failed


# ---- covers: corners as traces (build/formal/<task>/engine_0/trace*.vcd) ----------------

class FinisherCover(FormalTop):
    """The finisher with free inputs (each held until taken): a fall-back (eligible, but
    |C| >= L: decided after the frame's last beat, from the feeder's |C|), and two frames
    compressed back to back."""

    def elaborate(self, platform):
        m = Module()
        self.domain(m)
        m.submodules.dut = dut = Finisher()
        for port in (dut.front, dut.hsum, dut.ck, dut.clen, dut.dsum, dut.region):
            m.d.comb += [port.valid.eq(AnySeq(1)),
                         port.payload.eq(AnySeq(len(Value.cast(port.payload))))]
            source_rule(m, port, Assume, port.name if hasattr(port, "name") else "in")
        m.d.comb += dut.desc.ready.eq(AnySeq(1))
        source_rule(m, dut.desc, Assert, "desc")
        m.d.comb += [Cover(dut.fallback == 1), Cover(dut.compressed == 2)]
        return m


def test_finisher_covers():
    res = run(FinisherCover(), "tx_finisher_cover", mode="cover", depth=slow(24, 24), script=[])
    assert len(res.traces) >= 2, res.traces


class EgressBackToBack(EgressCheck):
    """Two frames out of the egress with no idle clock between them."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        dut = self.dut_ref
        o = dut.o
        prev_last = past(m, o.valid & o.ready & o.payload.last, name="prev_last")
        n_last = Counter(m, o.valid & o.ready & o.payload.last, 4, "n_last").value
        m.d.comb += Cover(prev_last & o.valid & (n_last == 1))
        return m


def test_egress_back_to_back_cover():
    res = run(EgressBackToBack(always_ready=True), "tx_egress_cover_b2b", mode="cover",
              depth=12, script=[])
    assert res.traces


class EgressMaxBackToBack(EgressCheck):
    """Two maximum-size frames (MAX_FRAME_BEATS beats each) out of the egress, a beat
    every clock, no idle clock between them: the second one's last beat. To keep ~580
    steps affordable the inputs are fixed (these drives replace the free ones): one
    maximum-size bypass descriptor always offered, the stores read as zeros, the output
    always ready; a cover of a narrower environment is still a real trace. No reset."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        dut = self.dut_ref
        d, o = dut.desc, dut.o
        m.d.comb += [d.valid.eq(1), Value.cast(d.payload).eq(0),
                     d.payload.nbeats.eq(MAX_FRAME_BEATS), d.payload.last_bytes.eq(32),
                     d.payload.mode.eq(MODE_PASS),
                     dut.orig.r_data.eq(0), dut.comp.r_data.eq(0)]
        cover_back_to_back(m, o, MAX_FRAME_BEATS)
        return m


def test_egress_max_back_to_back_cover():
    slow_only("a cover about 580 clocks deep")
    # solved from step 576 on: every step would take over 15 min (3-4 s a step past 360)
    res = run(EgressMaxBackToBack(always_ready=True), "tx_egress_cover_max_b2b",
              mode="cover", depth=2 * MAX_FRAME_BEATS + 8, script=[],
              engine=from_step(2 * MAX_FRAME_BEATS))
    assert res.traces


# ---- front + frontq + hsumq + ckq -------------------------------------------------------

class TxFrontCheck(FormalTop):
    """The TX front with the engine's frontq (8), hsumq (16) and ckq (16) behind it: hsum
    is written on the checksums' done strobe and ck (version 3's header fields) a clock
    after a frame's last beat, both without a ready check, and must never find their
    FIFO full. Neighbours: beatq's beats, the dispatcher's modes and Realigner cfgs are
    streams held until taken (any values, tkeep as AXI-stream has it); the finisher pops
    one result, one sum and one ck entry together, whenever it likes; the grouper takes
    the Realigner's beats at any time. ``hsumq_depth`` for the injected bug."""

    def __init__(self, hsumq_depth=16, frontq_depth=8, ckq_depth=16):
        self.hsumq_depth, self.frontq_depth = hsumq_depth, frontq_depth
        self.ckq_depth = ckq_depth

    def elaborate(self, platform):
        from inceptionn.hw.tx.front import Front as TxFront
        from inceptionn.hw.tx.layouts import CheckFields, HdrSums, front_result
        m = Module()
        self.domain(m)
        aw = 9
        m.submodules.dut = dut = TxFront(aw)
        m.submodules.frontq = frontq = StreamFifo(front_result(aw), self.frontq_depth)
        m.submodules.hsumq = hsumq = StreamFifo(HdrSums, self.hsumq_depth)
        m.submodules.ckq = ckq = StreamFifo(CheckFields, self.ckq_depth)
        wiring.connect(m, dut.result, frontq.i)
        wiring.connect(m, dut.hsum, hsumq.i)
        wiring.connect(m, dut.ck, ckq.i)
        for port, name in ((dut.beats, "beats"), (dut.mode, "mode"), (dut.rl_cfg, "rl_cfg")):
            m.d.comb += [port.valid.eq(AnySeq(1)),
                         port.payload.eq(AnySeq(len(Value.cast(port.payload))))]
            source_rule(m, port, Assume, name)
        keep_rule(m, dut.beats, "beats", Assume)
        m.d.comb += dut.o.ready.eq(AnySeq(1))
        fin = Signal()
        m.d.comb += [fin.eq(AnySeq(1) & frontq.o.valid & hsumq.o.valid & ckq.o.valid),
                     frontq.o.ready.eq(fin), hsumq.o.ready.eq(fin), ckq.o.ready.eq(fin)]
        m.d.comb += [Assert(~dut.hsum.valid | dut.hsum.ready, "front: hsumq written while full"),
                     Assert(~dut.ck.valid | dut.ck.ready, "front: ckq written while full")]
        source_rule(m, dut.o, Assert, "o")
        return m


def test_front_hsum_never_overflows_bmc():
    run(TxFrontCheck(), "tx_front_bmc", mode="bmc", depth=slow(10, 24), script=[])


def test_bug_front_shallow_hsumq_found():
    slow_only("a 20 s run (the front's checksums)")
    # hsumq of 2 entries behind frontq (8): three one-beat frames whose results wait.
    # (named by its message, or by its line where the flow's message lookup misses it)
    from pathlib import Path
    line = next(i for i, t in enumerate(Path(__file__).read_text().splitlines(), 1)
                if '"front: hsumq written' in t)
    run_bug(TxFrontCheck(hsumq_depth=2), "bug_tx_front_shallow_hsumq", 11,
            "hsumq written while full", f"{__file__}:{line}")


# ---- feeder + clenq ---------------------------------------------------------------------

class TxFeederCheck(FormalTop):
    """The feeder with the engine's clenq (8): |C| is pushed one clock after a frame's
    end, its ready checked at the end (two frame ends are at least two clocks apart).
    Neighbours: the CompressionUnit's groups, the shim and the tail are streams held
    until taken (any values); the AlignmentUnit takes at any time; the finisher pops
    clenq at any time. (dsum, the CompressionUnit's side port, is checked in the engine:
    its argument is the unit's own occupancy.) ``dropped_ready``: the feeder sees
    clenq always ready."""

    stall_ready = False             # the feeder never sees the AlignmentUnit ready

    def __init__(self, dropped_ready=False, clenq_depth=8):
        self.dropped_ready, self.clenq_depth = dropped_ready, clenq_depth

    def elaborate(self, platform):
        from inceptionn.hw.tx.feeder import Feeder
        from inceptionn.hw.tx.layouts import CLenInfo
        m = Module()
        self.domain(m)
        m.submodules.dut = dut = Feeder()
        m.submodules.clenq = clenq = StreamFifo(CLenInfo, self.clenq_depth)
        m.d.comb += [clenq.i.valid.eq(dut.clen.valid), clenq.i.payload.eq(dut.clen.payload),
                     dut.clen.ready.eq(1 if self.dropped_ready else clenq.i.ready)]
        for port, name in ((dut.groups, "groups"), (dut.shim, "shim"), (dut.tail, "tail")):
            m.d.comb += [port.valid.eq(AnySeq(1)),
                         port.payload.eq(AnySeq(len(Value.cast(port.payload))))]
            source_rule(m, port, Assume, name)
        # (named, for the liveness check's response times: test_formal_liveness.py)
        self.dut, self.clenq = dut, clenq
        self.o_ready, self.clenq_pop = Signal(), Signal()
        m.d.comb += [self.o_ready.eq(AnySeq(1)), self.clenq_pop.eq(AnySeq(1))]
        m.d.comb += [dut.decoded.d_valid.eq(0),
                     dut.o.ready.eq(0 if self.stall_ready else self.o_ready),
                     clenq.o.ready.eq(self.clenq_pop)]
        m.d.comb += Assert(~clenq.i.valid | clenq.i.ready, "feeder: clenq written while full")
        # The handshake rule on what the AlignmentUnit reads of a vector: length, last,
        # fill and the bytes below length (4 for a fill vector). The bytes above are
        # don't-care and do change under a stall (a prefix's upper bytes come from the
        # next group, which may arrive meanwhile).
        o = dut.o.payload
        n_used = Mux(o.fill, 4, o.length)
        used = Cat(*[Mux(n_used > b, o.data.word_select(b, 8), 0)
                     for b in range(len(o.data) // 8)])

        class _Used:
            valid, ready = dut.o.valid, dut.o.ready
            payload = Cat(used, o.length, o.last, o.fill)
        source_rule(m, _Used, Assert, "o")
        return m


def test_feeder_clen_never_overflows_bmc():
    run(TxFeederCheck(), "tx_feeder_bmc", mode="bmc", depth=slow(16, 30), script=[])


def test_bug_feeder_dropped_ready_found():
    # (a 2-entry clenq shows it within fewer frames; with its ready wired, the feeder
    # waits for any depth)
    run_bug(TxFeederCheck(dropped_ready=True, clenq_depth=2), "bug_tx_feeder_dropped_ready",
            12, "clenq written while full")
