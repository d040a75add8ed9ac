"""Formal checks of the RX engine's stages, one at a time (hw/rx/).

The RX stages hand each other registers and combinational handshakes, not only streams
(see hw/decompression_engine.py); each check here drives a stage's neighbours by an
abstract model of their contract (stated where it is built) and asserts the stage's own:

- ingress: its output obeys the handshake rule; each beat's byte count is tkeep's.
- hold: the beat memory is written only inside the frame's bank, below HOLD_BEATS
  (written on a strobe: the input is always ready in HEAD); ``done`` once per frame;
  the frames counted are the last beats taken.
- feed: its output into the unit obeys the handshake rule with any ready; a count of
  1..32 bytes (0 only for a frame with no compressed bytes), a lane below 32; never
  the live input and DRAIN at once; the end-of-input slot is written only when free.
- front: its start and Realigner-cfg outputs obey the handshake rule; the pending slot
  is written only when the back half has released it (a write without a ready check)
  and stays unchanged until then; ``feed`` (a load strobe) only into an idle feed.
- back + egress: the output obeys the handshake rule and the tkeep rule; one last beat
  per pending frame loaded (frames out = frames loaded, never ahead, never more than
  the one in progress behind); the slot released only while it holds a frame; the
  end-of-input slot read only while valid; PASS ended only while in PASS.

Properties that k-induction proves are run in ``prove`` mode; the others are BMC, at a
short depth in ``make test`` and a longer one under ``make formal``.
"""

from amaranth import *
from amaranth.lib import data

from inceptionn.hw.rx.back import Back
from inceptionn.hw.rx.egress import Egress
from inceptionn.hw.rx.feed import Feed
from inceptionn.hw.rx.front import Front
from inceptionn.hw.rx.hold import Hold
from inceptionn.hw.rx.ingress import Ingress
from inceptionn.hw.rx.layouts import HOLD_BEATS, HeldFrame, Pending
from inceptionn.hw.packet_matcher import MatchInfo
from inceptionn.hw.wire import BEAT_BYTES, MAX_FRAME_BYTES
from stream_props import (AnySeq, Assert, Assume, Counter, Cover, FormalTop, keep_rule,
                          past, run, slow, source_rule, stable_while)


def free(m, sig):
    """Drive ``sig`` (a Signal or a view) with a free value each clock."""
    v = Value.cast(sig)
    m.d.comb += v.eq(AnySeq(len(v)))


def free_beat_stream(m, valid, payload, ready, name):
    """A source of input beats (any payload, tkeep as AXI-stream has it), held until
    ``ready``."""
    free(m, valid)
    free(m, payload)

    class _Port:
        pass
    p = _Port()
    p.valid, p.payload, p.ready = valid, payload, ready
    source_rule(m, p, Assume, name)
    keep_rule(m, p, name, Assume)


# ---- ingress --------------------------------------------------------------------------

class RxIngressCheck(FormalTop):
    def elaborate(self, platform):
        m = Module()
        self.domain(m)
        m.submodules.dut = dut = Ingress()
        free_beat_stream(m, dut.i.valid, dut.i.payload, dut.i.ready, "i")
        free(m, dut.o.ready)
        source_rule(m, dut.o, Assert, "o")
        keep_rule(m, dut.o, "o")
        ones = sum(dut.i.payload.keep[k] for k in range(BEAT_BYTES))
        with m.If(dut.o.valid):
            m.d.comb += Assert(dut.o.payload.kc == ones, "ingress: byte count is not tkeep's")
        return m


def test_rx_ingress_induction():
    run(RxIngressCheck(), "rx_ingress_prove", mode="prove", depth=2, script=[])


# ---- hold -----------------------------------------------------------------------------

class RxHoldCheck(FormalTop):
    """The front half's contract, abstracted: ``take`` once per held frame, after
    ``done``; ``restart`` with or after the take; the other readers of the input
    (DRAIN, PASS, the feed's live input) only outside HEAD and one at a time."""

    def __init__(self, restart_bug=False):
        self.restart_bug = restart_bug          # restart without a take first

    def elaborate(self, platform):
        m = Module()
        self.domain(m)
        m.submodules.dut = dut = Hold()
        inb = dut.beats
        free_beat_stream(m, inb.valid, inb.payload, inb.ready, "beats")
        free(m, dut.enable)
        free(m, dut.f_addr)
        free(m, dut.o_addr)
        wait_take = Signal()           # done seen, not taken yet
        wait_restart = Signal()        # taken, HEAD not restarted yet
        taken_now = Signal()
        m.d.comb += [taken_now.eq(AnySeq(1) & wait_take), dut.take.eq(taken_now)]
        restart_ok = wait_restart | taken_now | (self.restart_bug & ~dut.head)
        m.d.comb += dut.restart.eq(AnySeq(1) & restart_ok)
        with m.If(dut.done):
            m.d.sync += wait_take.eq(1)
        with m.If(taken_now):
            m.d.sync += [wait_take.eq(0), wait_restart.eq(1)]
        with m.If(dut.restart):
            m.d.sync += wait_restart.eq(0)
        readers = Signal(3)
        free(m, readers)
        m.d.comb += [Assume((readers & (readers - 1)) == 0),
                     Assume(~dut.head | (readers == 0)),
                     dut.drain.eq(readers[0]), dut.pass_take.eq(readers[1]),
                     dut.live_take.eq(readers[2])]

        held = dut.held
        m.d.comb += [
            Assert(~dut.hdr_valid | (held.nheld < HOLD_BEATS),
                   "hold: beat written past the held beats"),
            Assert(held.hsel == (C(1, HOLD_BEATS + 1) << held.nheld)[:HOLD_BEATS],
                   "hold: hsel is not nheld one-hot"),
            Assert(~dut.head | inb.ready, "hold: input not ready in HEAD"),
            Assert(~dut.done | dut.head, "hold: done outside HEAD"),
            Assert(~dut.done | ~wait_take, "hold: done twice for a frame"),
        ]
        if not self.restart_bug:
            # the invariants the induction needs (of the contract above, so left out
            # with the bug): HEAD, or a frame waiting for its take, or taken (nothing
            # held) and waiting for HEAD again
            m.d.comb += [
                Assert(held.nheld <= HOLD_BEATS, "hold: nheld out of range"),
                Assert(dut.head ^ (wait_take | wait_restart), "hold: state out of step"),
                Assert(~wait_take | ~wait_restart, "hold: state out of step"),
                Assert(~dut.head | (held.nheld < HOLD_BEATS), "hold: HEAD with a full bank"),
                Assert(~wait_restart | (held.nheld == 0), "hold: taken frame still held"),
            ]
        lasts = Counter(m, inb.valid & inb.ready & inb.payload.last, 32, "lasts").value
        m.d.comb += Assert(dut.frames_in == lasts, "hold: frames counted are not the last beats")
        return m


def test_rx_hold_induction():
    run(RxHoldCheck(), "rx_hold_prove", mode="prove", depth=slow(4, 8), script=[])


def test_bug_rx_hold_restart_without_take_found():
    # The front half restarting HEAD without taking the held frame: the next beats are
    # written past the bank's held beats.
    res = run(RxHoldCheck(restart_bug=True), "bug_rx_hold_restart", mode="bmc", depth=10,
              script=[], expect="FAIL")
    assert any("written past" in f or "done twice" in f for f in res.failed), res.failed


# ---- back + egress --------------------------------------------------------------------

class RxBackCheck(FormalTop):
    """The back half and the egress, the output as the engine's (before its slice).

    Neighbours: the front half loads the pending slot (any frame a CHECK can produce)
    only when it is free, raises ``pend_ready`` at once for a bypass and at any later
    clock for a decompressed frame, PASS for a bypass not held in full until its end;
    the Realigner's beats and the input beats are streams held until taken (the input
    is taken by others only outside PASS); the feed's end-of-input slot is held until
    read; the header memory, the checksum and the lengths do not change under a stalled
    output beat (the hold writes the other bank; the front half's next frame waits for
    the release). ``dropped_ready``: the back half sees an output always ready while
    the output's real ready is free (a ready not wired)."""

    def __init__(self, dropped_ready=False):
        self.dropped_ready = dropped_ready

    def elaborate(self, platform):
        m = Module()
        self.domain(m)
        m.submodules.back = back = Back()
        m.submodules.egress = eg = Egress()
        m.d.comb += [eg.ctl.valid.eq(back.o.valid), eg.ctl.payload.eq(back.o.payload)]
        o_ready = Signal()
        free(m, o_ready)
        m.d.comb += [eg.o.ready.eq(o_ready),
                     back.o.ready.eq(1 if self.dropped_ready else eg.ctl.ready)]

        # The pending slot (front half).
        slot = Signal(Pending)
        full = Signal()
        rdy = Signal()
        f_pass = Signal()
        new = Signal(Pending)
        load = Signal()
        free(m, new)
        # (the front half takes the next frame only after the hold restarted HEAD, at
        # the end of PASS for a bypass not held in full)
        m.d.comb += load.eq(AnySeq(1) & ~full & ~f_pass)
        length = Signal(14)            # L of a decompressed frame
        free(m, length)
        span = Signal(15)
        m.d.comb += span.eq(new.p + (BEAT_BYTES - 1) + length)
        with m.If(load):
            m.d.comb += [
                Assume((new.nheld >= 1) & (new.nheld <= HOLD_BEATS)),
                Assume(new.nh1 == (new.nheld == 1)),
                Assume(new.held_last | (new.nheld == HOLD_BEATS)),
                Assume(~new.held_last | ((new.held_keep != 0) &
                                         ((new.held_keep & (new.held_keep + 1)) == 0))),
                Assume((new.ihl >= 5)),
            ]
            with m.If(~new.bypass):
                m.d.comb += [
                    Assume((new.p >= 42) & (new.p <= HOLD_BEATS * BEAT_BYTES - 6) &
                           (new.p[:2] == 2)),
                    Assume((length >= 1) & (length <= MAX_FRAME_BYTES - new.p)),
                    Assume(new.left == span[5:]), Assume(new.end_lane == span[:5]),
                    Assume(new.one == (span[5:] == 1)),
                ]
            m.d.sync += [slot.eq(new), full.eq(1), rdy.eq(new.bypass),
                         f_pass.eq(new.bypass & ~new.held_last)]
        with m.Elif(full & ~rdy):
            m.d.sync += rdy.eq(AnySeq(1))
        with m.If(back.release):
            m.d.sync += [full.eq(0), rdy.eq(0)]
        with m.If(back.end_live):
            m.d.sync += f_pass.eq(0)
        m.d.comb += [back.pend.eq(slot), back.pend_ready.eq(rdy), back.f_pass.eq(f_pass)]
        m.d.comb += [Assert(~back.release | full, "back: releases a free slot"),
                     Assert(~back.end_live | f_pass, "back: PASS ends outside PASS")]

        # The feed's end-of-input slot.
        fin_valid = Signal()
        fin_bad = Signal()
        fin_trunc = Signal()
        with m.If(~fin_valid & AnySeq(1)):
            m.d.sync += [fin_valid.eq(1), fin_bad.eq(AnySeq(1)), fin_trunc.eq(AnySeq(1))]
        with m.If(back.fin_clear):
            m.d.sync += fin_valid.eq(0)
        m.d.comb += [back.fin.valid.eq(fin_valid), back.fin.bad.eq(fin_bad),
                     back.fin.trunc.eq(fin_trunc)]
        m.d.comb += Assert(~back.fin_clear | fin_valid, "back: reads an empty end-of-input slot")

        # The input beats (taken by others only outside PASS) and the Realigner's beats.
        in_ready = Signal()
        m.d.comb += in_ready.eq(back.pass_take | (AnySeq(1) & ~f_pass))
        free_beat_stream(m, back.beat_valid, back.beat, in_ready, "beat")
        free(m, back.words.valid)
        free(m, back.words.payload)
        source_rule(m, back.words, Assume, "words")

        # The egress's other sources, unchanged under a stalled beat.
        stalled = eg.o.valid & ~eg.o.ready
        for sig, name in ((eg.hdr_data, "hdr"), (eg.csum, "csum"), (eg.total, "total"),
                          (eg.udp_len, "udp_len")):
            free(m, sig)
            stable_while(m, stalled, sig, name)

        source_rule(m, eg.o, Assert, "o")
        keep_rule(m, eg.o, "o")
        o_last = eg.o.valid & eg.o.ready & eg.o.payload.last
        taken = Counter(m, full & ~past(m, full, name="full_prev"), 8, "frames_loaded").value
        lasts = Counter(m, o_last, 8, "lasts").value
        behind = Signal(8)
        m.d.comb += behind.eq(taken - lasts)
        m.d.comb += [Assert(behind <= 2, "back: last beats out of step with frames"),
                     Assert(eg.frames_out[:8] == lasts, "egress: frames counted wrong")]
        return m


def test_rx_back_egress_bmc():
    run(RxBackCheck(), "rx_back_bmc", mode="bmc", depth=slow(12, 24), script=[])


def test_bug_rx_back_dropped_ready_found():
    res = run(RxBackCheck(dropped_ready=True), "bug_rx_back_dropped_ready", mode="bmc",
              depth=10, script=[], expect="FAIL")
    assert any("before ready" in f for f in res.failed), res.failed
