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
  and stays unchanged until then; ``feed`` (a load strobe) only into an idle feed; a
  frame is decompressed only in a version its mask accepts, and a version-3 frame
  (magic 0xC7) only after the check stage answered, and answered a match: RX never
  accepts on a check mismatch.
- back + egress: the output obeys the handshake rule and the tkeep rule; one last beat
  per pending frame loaded (frames out = frames loaded, never ahead, never more than
  the one in progress behind); the slot released only while it holds a frame; the
  end-of-input slot read only while valid; PASS ended only while in PASS.

The feed, front and back checks also assert each stage's state (its formal-only
``formal_*`` signals) against their neighbour models: the invariants with which the
liveness checks (test_formal_liveness.py) close by induction.

Properties that k-induction proves are run in ``prove`` mode; the others are BMC, at a
short depth in ``make test`` and a longer one under ``make formal``.
"""

import pytest
from amaranth import *

from inceptionn.hw.rx.back import Back
from inceptionn.hw.rx.egress import Egress
from inceptionn.hw.rx.feed import Feed
from inceptionn.hw.rx.front import Front
from inceptionn.hw.rx.hold import Hold
from inceptionn.hw.rx.ingress import Ingress
from inceptionn.hw.rx.layouts import HOLD_BEATS, HeldFrame, Pending
from inceptionn.hw.packet_matcher import MatchInfo
from inceptionn.hw.wire import BEAT_BYTES, MAX_FRAME_BEATS, MAX_FRAME_BYTES
from stream_props import (AnySeq, Assert, Assume, Counter, Cover, FormalTop, cover_back_to_back,
                          keep_rule, past, run, run_bug, slow, slow_only, source_rule, stable_while)

pytestmark = pytest.mark.solver      # make formal-quick and make formal, not make test


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


class _StageCheck(FormalTop):
    """A stage check with a dropped-ready bug to inject and covers to add. After
    ``elaborate`` the stage and its neighbour models' signals are attributes (the
    liveness checks, test_formal_liveness.py, add their properties to them)."""

    stall_ready = False             # the stage never sees its consumer ready (liveness bug)

    def __init__(self, dropped_ready=False, cover=False):
        self.dropped_ready, self.cover = dropped_ready, cover


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
        free(m, dut.front.f_addr)
        free(m, dut.egress.hdr_addr)
        wait_take = Signal()           # done seen, not taken yet
        wait_restart = Signal()        # taken, HEAD not restarted yet
        taken_now = Signal()
        m.d.comb += [taken_now.eq(AnySeq(1) & wait_take), dut.front.take.eq(taken_now)]
        restart_ok = wait_restart | taken_now | (self.restart_bug & ~dut.front.head)
        m.d.comb += dut.front.restart.eq(AnySeq(1) & restart_ok)
        with m.If(dut.front.done):
            m.d.sync += wait_take.eq(1)
        with m.If(taken_now):
            m.d.sync += [wait_take.eq(0), wait_restart.eq(1)]
        with m.If(dut.front.restart):
            m.d.sync += wait_restart.eq(0)
        readers = Signal(3)
        free(m, readers)
        m.d.comb += [Assume((readers & (readers - 1)) == 0),
                     Assume(~dut.front.head | (readers == 0)),
                     dut.feed.drain.eq(readers[0]), dut.back.pass_take.eq(readers[1]),
                     dut.feed.live_take.eq(readers[2])]

        held = dut.front.held
        m.d.comb += [
            Assert(~dut.restore.beat_valid | (held.nheld < HOLD_BEATS),
                   "hold: beat written past the held beats"),
            Assert(held.hsel == (C(1, HOLD_BEATS + 1) << held.nheld)[:HOLD_BEATS],
                   "hold: hsel is not nheld one-hot"),
            Assert(~dut.front.head | inb.ready, "hold: input not ready in HEAD"),
            Assert(~dut.front.done | dut.front.head, "hold: done outside HEAD"),
            Assert(~dut.front.done | ~wait_take, "hold: done twice for a frame"),
        ]
        if not self.restart_bug:
            # the invariants the induction needs (of the contract above, so left out
            # with the bug): HEAD, or a frame waiting for its take, or taken (nothing
            # held) and waiting for HEAD again
            m.d.comb += [
                Assert(held.nheld <= HOLD_BEATS, "hold: nheld out of range"),
                Assert(dut.front.head ^ (wait_take | wait_restart), "hold: state out of step"),
                Assert(~wait_take | ~wait_restart, "hold: state out of step"),
                Assert(~dut.front.head | (held.nheld < HOLD_BEATS), "hold: HEAD with a full bank"),
                Assert(~wait_restart | (held.nheld == 0), "hold: taken frame still held"),
            ]
        lasts = Counter(m, inb.valid & inb.ready & inb.payload.last, 32, "lasts").value
        m.d.comb += Assert(dut.frames_in == lasts, "hold: frames counted are not the last beats")
        return m


# ---- back + egress --------------------------------------------------------------------

class RxBackCheck(_StageCheck):
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

    def elaborate(self, platform):
        m = Module()
        self.domain(m)
        m.submodules.back = back = Back()
        m.submodules.egress = eg = Egress()
        m.d.comb += [eg.ctl.valid.eq(back.o.valid), eg.ctl.payload.eq(back.o.payload)]
        o_ready = Signal()
        free(m, o_ready)
        m.d.comb += [eg.o.ready.eq(o_ready),
                     back.o.ready.eq(0 if self.stall_ready else
                                    1 if self.dropped_ready else eg.ctl.ready)]
        self.back, self.eg, self.o_ready = back, eg, o_ready

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
        want = Signal()
        m.d.comb += [want.eq(AnySeq(1)), load.eq(want & ~full & ~f_pass)]
        self.new, self.want = new, want
        rdy_set = Signal()             # the HeaderRestore done (a decompressed frame)
        m.d.comb += rdy_set.eq(AnySeq(1))
        length = Signal(14)            # L of a decompressed frame
        free(m, length)
        slot_len = Signal(14)

        def well_formed(f, ln, check):
            """``check`` the facts of a pending frame ``f`` of L = ``ln`` a CHECK can
            produce (assumed as the front loads it, asserted while it is in the slot)."""
            span = Signal(15, name=f"span_{check.__name__}")
            m.d.comb += span.eq(f.p + (BEAT_BYTES - 1) + ln)
            kind = check

            def check(c):
                return kind(c, "back: pending slot not a frame CHECK makes")
            m.d.comb += [
                check((f.nheld >= 1) & (f.nheld <= HOLD_BEATS)),
                check(f.nh1 == (f.nheld == 1)),
                check(f.held_last | (f.nheld == HOLD_BEATS)),
                check(~f.held_last | ((f.held_keep != 0) &
                                      ((f.held_keep & (f.held_keep + 1)) == 0))),
                check((f.ihl >= 5)),
            ]
            with m.If(~f.bypass):
                m.d.comb += [
                    check((f.p >= 42) & (f.p <= HOLD_BEATS * BEAT_BYTES - 6) & (f.p[:2] == 2)),
                    check((ln >= 1) & (ln <= MAX_FRAME_BYTES - f.p)),
                    check(f.left == span[5:]), check(f.end_lane == span[:5]),
                    check(f.one == (span[5:] == 1)),
                ]
        with m.If(load):
            well_formed(new, length, Assume)
        with m.If(full):
            well_formed(slot, slot_len, Assert)
        with m.If(load):
            m.d.sync += slot_len.eq(length)
            m.d.sync += [slot.eq(new), full.eq(1), rdy.eq(new.bypass),
                         f_pass.eq(new.bypass & ~new.held_last)]
        with m.Elif(full & ~rdy):
            m.d.sync += rdy.eq(rdy_set)
        with m.If(back.front.release):
            m.d.sync += [full.eq(0), rdy.eq(0)]
        with m.If(back.front.end_live):
            m.d.sync += f_pass.eq(0)
        m.d.comb += [back.front.pend.eq(slot), back.front.pend_ready.eq(rdy), back.front.f_pass.eq(f_pass)]
        self.full, self.rdy, self.rdy_set, self.f_pass = full, rdy, rdy_set, f_pass
        m.d.comb += [Assert(~back.front.release | full, "back: releases a free slot"),
                     Assert(~back.front.end_live | f_pass, "back: PASS ends outside PASS")]

        # The feed's end-of-input slot.
        fin_valid = Signal()
        fin_bad = Signal()
        fin_trunc = Signal()
        self.fin_set = fin_set = Signal()
        m.d.comb += fin_set.eq(AnySeq(1))
        with m.If(~fin_valid & fin_set):
            m.d.sync += [fin_valid.eq(1), fin_bad.eq(AnySeq(1)), fin_trunc.eq(AnySeq(1))]
        with m.If(back.feed.fin_clear):
            m.d.sync += fin_valid.eq(0)
        m.d.comb += [back.feed.fin.valid.eq(fin_valid), back.feed.fin.bad.eq(fin_bad),
                     back.feed.fin.trunc.eq(fin_trunc)]
        m.d.comb += Assert(~back.feed.fin_clear | fin_valid, "back: reads an empty end-of-input slot")

        # The input beats (taken by others only outside PASS) and the Realigner's beats.
        in_ready = Signal()
        m.d.comb += in_ready.eq(back.hold.pass_take | (AnySeq(1) & ~f_pass))
        free_beat_stream(m, back.hold.beat_valid, back.hold.beat, in_ready, "beat")
        free(m, back.words.valid)
        free(m, back.words.payload)
        source_rule(m, back.words, Assume, "words")

        # The egress's other sources, unchanged under a stalled beat.
        stalled = eg.o.valid & ~eg.o.ready
        for sig, name in ((eg.hold.hdr_data, "hdr"), (eg.restore.csum, "csum"), (eg.front.total, "total"),
                          (eg.front.udp_len, "udp_len")):
            free(m, sig)
            stable_while(m, stalled, sig, name)

        source_rule(m, eg.o, Assert, "o")
        keep_rule(m, eg.o, "o")
        o_last = eg.o.valid & eg.o.ready & eg.o.payload.last
        rise = full & ~past(m, full, name="full_prev")     # counted from the next clock
        taken = Counter(m, rise, 8, "frames_loaded").value
        lasts = Counter(m, o_last, 8, "lasts").value
        behind = Signal(8)
        m.d.comb += behind.eq(taken - lasts)
        self.behind = behind
        # the back half's frames against the slot's model (the induction's invariants)
        m.d.comb += [
            Assert(behind + rise == full + back.formal_after,
                   "back: frames out of step with the slot"),
            Assert(~back.formal_open | (full & rdy), "back: frame open without its slot"),
            Assert(~back.formal_live | f_pass, "back: PASS out of step"),
            Assert(~rdy | full, "back: slot ready while free"),
            Assert(~f_pass | (full & slot.bypass & ~slot.held_last) | back.formal_live,
                   "back: PASS out of step"),
            Assert(~back.formal_open | (back.formal_frame == ~slot.bypass),
                   "back: frame kind out of step with the slot"),
            Assert(~(full & slot.bypass & ~slot.held_last) | f_pass, "back: PASS out of step"),
            # (the front half takes no frame during PASS)
            Assert(~(back.formal_live & ~back.formal_open) | ~full, "back: PASS out of step"),
        ]
        m.d.comb += [Assert(behind <= 2, "back: last beats out of step with frames"),
                     Assert(eg.frames_out[:8] == lasts, "egress: frames counted wrong")]
        if self.cover:
            # two frames out with no idle clock between them, a decompressed one and
            # a malformed one (the error flag on its last beat)
            prev_last = past(m, o_last, name="prev_last")
            m.d.comb += [Cover(prev_last & eg.o.valid & eg.o.ready),
                         Cover(o_last & eg.o.payload.user & ~eg.ctl.payload.live &
                               ~eg.ctl.payload.held)]
        return m


class RxBackMaxBackToBack(RxBackCheck):
    """Two decompressed frames of MAX_FRAME_BYTES (MAX_FRAME_BEATS beats out each), a beat
    every clock, no idle clock between them: the second one's last beat. To keep ~580
    steps affordable the neighbours are narrowed (the front half loads a maximum-size
    decompressed frame whenever the slot is free and its header is at once ready, the
    Realigner and the end-of-input slot always there, the output always ready, the data
    zeros: these drives replace the free ones); a cover of a narrower environment is
    still a real trace. No reset."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        eg, new, back = self.eg, self.new, self.back
        m.d.comb += [Value.cast(back.words.payload).eq(0), back.hold.beat_valid.eq(0),
                     Value.cast(back.hold.beat).eq(0), eg.hold.hdr_data.eq(0),
                     eg.restore.csum.eq(0), eg.front.total.eq(0), eg.front.udp_len.eq(0)]
        m.d.comb += [Assume(self.want), Assume(self.rdy_set), Assume(self.fin_set),
                     Assume(self.o_ready), Assume(self.back.words.valid),
                     Assume(~new.bypass & (new.left == MAX_FRAME_BEATS))]
        cover_back_to_back(m, eg.o, MAX_FRAME_BEATS)
        return m


# ---- feed -----------------------------------------------------------------------------

class RxFeedCheck(_StageCheck):
    """The feed, with the front half loading it (any registers) only when its previous
    frame is done (its FIN written), the pending slot loaded with it and unchanged
    until the next load, the input beats held until taken (by others only while the
    feed has no frame), the held beats' memory port unchanged under a stalled beat, the
    back half reading the end-of-input slot only while it is valid.
    ``dropped_ready``: the feed sees the unit always ready, the unit's ready is free."""

    def elaborate(self, platform):
        m = Module()
        self.domain(m)
        m.submodules.dut = dut = Feed()
        busy = Signal()                # loaded with go, FIN not written yet
        load = Signal()
        m.d.comb += [load.eq(AnySeq(1) & ~busy), dut.front.start.valid.eq(load)]
        free(m, dut.front.start.payload)
        pend = Signal(Pending)
        with m.If(load):
            m.d.sync += [pend.eq(AnySeq(len(Value.cast(pend)))),
                         busy.eq(dut.front.start.payload.go)]
        with m.If(dut.front.fin_done):
            m.d.sync += busy.eq(0)
        if self.cover:
            # a frame fed: held beats, then live ones, its end-of-input slot written
            lives = Counter(m, dut.hold.live_take & dut.hold.beat_valid, 4, "lives").value
            m.d.comb += Cover(dut.front.fin_done & (lives != 0))
        m.d.comb += dut.front.pend.eq(pend)
        in_ready = Signal()
        m.d.comb += in_ready.eq(dut.hold.live_take | dut.hold.drain | (AnySeq(1) & ~busy))
        free_beat_stream(m, dut.hold.beat_valid, dut.hold.beat, in_ready, "beat")
        free(m, dut.hold.f_data)
        u_ready = Signal()
        free(m, u_ready)
        m.d.comb += dut.o.ready.eq(0 if self.stall_ready else 1 if self.dropped_ready else u_ready)
        self.dut, self.busy, self.u_ready = dut, busy, u_ready
        m.d.comb += dut.back.fin_clear.eq(AnySeq(1) & dut.back.fin.valid)
        o = dut.o

        class _Out:
            valid, payload, ready = o.valid, o.payload, u_ready
        stable_while(m, o.valid & ~u_ready, dut.hold.f_data, "f_data")
        source_rule(m, _Out, Assert, "o")
        m.d.comb += [
            Assert(~(dut.hold.live_take & dut.hold.drain), "feed: live input and DRAIN at once"),
            Assert(~o.valid | busy, "feed: a beat without a frame"),
            Assert(~(dut.hold.drain & o.valid), "feed: DRAIN while feeding"),
            Assert(o.payload.first < BEAT_BYTES, "feed: lane out of range"),
            # the front's view (loaded, FIN not written) is the feed's own state: the
            # invariant that makes the induction close
            Assert(busy == dut.formal_busy, "feed: busy out of step"),
        ]
        return m


# ---- front ----------------------------------------------------------------------------

class RxFrontCheck(FormalTop):
    """The front half with abstract neighbours: the hold holds a frame (any facts)
    between ``done`` and ``take`` and is in HEAD again after ``restart``; the matcher
    reports once per frame (any result); the HeaderRestore is done some clocks after
    its start; the back half releases the slot once it is ready and ends PASS only in
    PASS; the feed writes FIN some clocks after a decompressing load and steps the read
    address only then; the unit's and the Realigner's ready are free.
    The check stage answers (``done``, a level until the next ``go``, with any ``ok``)
    some clocks after each ``go``.
    ``dropped_release``: the front half sees the slot released at every clock (the back
    half's handshake not wired); ``ok_stuck``: it sees every check word match (the
    check's answer not wired); ``cover``: two frames taken, the second decompressed.
    """

    def __init__(self, dropped_release=False, ok_stuck=False, cover=False, cover_v3=False):
        self.dropped_release, self.ok_stuck = dropped_release, ok_stuck
        self.cover, self.cover_v3 = cover, cover_v3

    def elaborate(self, platform):
        m = Module()
        self.domain(m)
        m.submodules.dut = dut = Front()
        # hold
        head = Signal(init=1)
        held = Signal(HeldFrame)
        new = Signal(HeldFrame)
        free(m, new)
        done = Signal()
        m.d.comb += [done.eq(AnySeq(1) & head), dut.hold.done.eq(done), dut.hold.head.eq(head),
                     dut.hold.held.eq(held)]
        with m.If(done):
            m.d.comb += [Assume((new.nheld >= 1) & (new.nheld <= HOLD_BEATS)),
                         Assume(new.hsel == (C(1, HOLD_BEATS + 1) << new.nheld)[:HOLD_BEATS]),
                         Assume(new.last | (new.nheld == HOLD_BEATS)),
                         Assume(new.bank == held.bank)]
            m.d.sync += [held.eq(new), head.eq(0)]
        held_wait = Signal()           # done, not taken
        wait_restart = Signal()
        with m.If(done):
            m.d.sync += held_wait.eq(1)
        with m.If(dut.hold.take):
            m.d.sync += [held_wait.eq(0), wait_restart.eq(1), held.bank.eq(~held.bank)]
        with m.If(dut.hold.restart):
            m.d.sync += [head.eq(1), wait_restart.eq(0)]
        m.d.comb += [Assert(~dut.hold.take | held_wait, "front: takes a frame not held"),
                     Assert(~dut.hold.restart | wait_restart | dut.hold.take,
                            "front: restarts HEAD without a take")]
        # matcher
        reported = Signal()
        info = Signal(MatchInfo)
        mdone = Signal()
        m.d.comb += [mdone.eq(AnySeq(1) & ~reported), dut.matcher.done.eq(mdone),
                     dut.matcher.info.eq(info)]
        with m.If(mdone):
            m.d.sync += [reported.eq(1), info.eq(AnySeq(len(Value.cast(info))))]
        with m.If(dut.hold.restart):
            m.d.sync += reported.eq(0)
        # HeaderRestore
        restoring = Signal()
        rdone = Signal()
        m.d.comb += [rdone.eq(AnySeq(1) & restoring), dut.restore.done.eq(rdone)]
        with m.If(dut.restore.start):
            m.d.sync += restoring.eq(1)
        with m.If(rdone):
            m.d.sync += restoring.eq(0)
        # back half
        busy = Signal()                # slot written, not released
        rel = Signal()
        m.d.comb += [rel.eq(AnySeq(1) & dut.back.pend_ready),
                     dut.back.release.eq(1 if self.dropped_release else rel),
                     dut.back.end_live.eq(AnySeq(1) & dut.back.f_pass)]
        with m.If(dut.hold.take):
            m.d.sync += busy.eq(1)
        with m.If(rel):
            m.d.sync += busy.eq(0)
        m.d.comb += [Assert(~dut.hold.take | ~busy, "front: pending slot written while full"),
                     Assert(~rel | busy, "front: slot ready while free")]
        pend_prev = past(m, dut.back.pend, name="pend_prev")
        busy_prev = past(m, busy & ~rel, name="busy_prev")
        with m.If(busy_prev):
            m.d.comb += Assert(Value.cast(dut.back.pend) == Value.cast(pend_prev),
                               "front: pending slot changed before its release")
        # feed
        feeding = Signal()
        fdone = Signal()
        m.d.comb += [fdone.eq(AnySeq(1) & feeding), dut.feed.fin_done.eq(fdone),
                     dut.feed.ra_step.eq(AnySeq(1) & feeding), dut.feed.ra_next.eq(AnySeq(3))]
        with m.If(dut.feed.start.valid & dut.feed.start.payload.go):
            m.d.sync += feeding.eq(1)
        with m.If(fdone):
            m.d.sync += feeding.eq(0)
        m.d.comb += Assert(~dut.feed.start.valid | ~feeding, "front: feed loaded while busy")
        # check stage: its answer some clocks after go, until the next go
        ck_busy = Signal()
        ck_done = Signal()
        ck_ok = Signal()
        ck_answer = Signal()
        m.d.comb += ck_answer.eq(AnySeq(1) & ck_busy)
        with m.If(dut.check.go):
            m.d.sync += [ck_busy.eq(1), ck_done.eq(0)]
        with m.Elif(ck_answer):
            m.d.sync += [ck_busy.eq(0), ck_done.eq(1), ck_ok.eq(AnySeq(1))]
        m.d.comb += [dut.check.done.eq(ck_done),
                     dut.check.ok.eq(1 if self.ok_stuck else ck_ok)]
        self.ck_busy, self.ck_answer = ck_busy, ck_answer
        # the check's model in step with the front half: answered or answering once the
        # frame's go left MATCH, idle before (the induction's invariant)
        m.d.comb += Assert(~(ck_busy & ck_done), "front: check model out of step")
        # The decision: decompressed only in an accepted version, version 3 only on a
        # match (the answer to this frame's go: the next go comes after its take).
        accept = dut.hold.take & dut.feed.start.payload.go
        magic = dut.formal_magic
        vbit = Mux(magic == 0xC5, held.versions[0],
                   Mux(magic == 0xC6, held.versions[1], Mux(magic == 0xC7, held.versions[2], 0)))
        m.d.comb += [
            Assert(~accept | vbit, "front: decompresses a version its mask refuses"),
            Assert(~accept | (magic != 0xC7) | (ck_done & ck_ok),
                   "front: accepts version 3 on a check mismatch"),
            Assert(~dut.check.go | dut.formal_match, "front: check started outside MATCH"),
        ]
        self.dut, self.held_wait, self.reported, self.restoring = dut, held_wait, reported, restoring
        self.busy, self.feeding = busy, feeding
        self.mdone, self.rdone, self.rel, self.fdone = mdone, rdone, rel, fdone
        # the front half's state against the neighbour models' (the induction's invariants)
        m.d.comb += [
            Assert(busy == dut.formal_busy, "front: slot state out of step"),
            Assert(held_wait == dut.formal_held, "front: held frame out of step"),
            Assert(~dut.formal_ready | busy, "front: slot ready while free"),
            Assert(~dut.formal_pm | reported, "front: matcher result out of step"),
            Assert(~dut.formal_pm | head | dut.formal_match, "front: matcher result out of step"),
            Assert(~reported | dut.formal_pm | wait_restart | (held_wait & ~dut.formal_match),
                   "front: matcher result out of step"),
            Assert(~busy | dut.formal_ready | restoring | dut.restore.start,
                   "front: slot waits for no checksum"),
            Assert(head + held_wait + wait_restart == 1, "front: hold model out of step"),
            Assert(~wait_restart | reported, "front: matcher result out of step"),
        ]
        free(m, dut.hold.f_data)
        for port, name in ((dut.start, "start"), (dut.rl_cfg, "rl_cfg")):
            free(m, port.ready)
            source_rule(m, port, Assert, name)
        if self.cover:
            takes = Counter(m, dut.hold.take, 4, "takes").value
            m.d.comb += Cover((takes == 1) & dut.hold.take & dut.feed.start.payload.go)
        if self.cover_v3:
            m.d.comb += Cover(accept & (magic == 0xC7))
        return m


# ---- the checks: passing properties, covers (non-vacuity, traces kept), injected bugs ---

PROOFS = {                     # task: (wrapper, mode, depth)
    "rx_ingress_prove": (RxIngressCheck, "prove", 2),
    "rx_hold_prove": (RxHoldCheck, "prove", slow(4, 8)),
    "rx_front_bmc": (RxFrontCheck, "bmc", slow(10, 20)),
    "rx_feed_bmc": (RxFeedCheck, "bmc", slow(10, 20)),
    "rx_back_bmc": (RxBackCheck, "bmc", slow(10, 24)),
}

COVERS = {                     # task: (wrapper, depth, traces)
    # two frames through the front half, the second decompressed
    "rx_front_cover": (RxFrontCheck, 20, 1),
    # a version-3 frame decompressed (the check's property is not vacuous)
    "rx_front_cover_v3": (lambda cover: RxFrontCheck(cover_v3=cover), 12, 1),
    # a frame fed from held and live beats to its FIN
    "rx_feed_cover": (RxFeedCheck, 10, 1),
    # two frames out with no idle clock between; a malformed decompressed frame
    "rx_back_cover": (RxBackCheck, 12, 2),
}

BUGS = {                       # task: (wrapper, its bug, depth, messages that may catch it)
    # the front half restarting HEAD without taking the held frame: the bank is
    # overwritten (the next beats past the held ones, or a second done)
    "bug_rx_hold_restart": (RxHoldCheck, {"restart_bug": True}, 10,
                            ("written past", "done twice")),
    # (the slot's state against the back half's model shows it a clock earlier)
    "bug_rx_front_dropped_release": (RxFrontCheck, {"dropped_release": True}, 10,
                                     ("written while full", "slot state out of step")),
    "bug_rx_feed_dropped_ready": (RxFeedCheck, {"dropped_ready": True}, 8, ("before ready",)),
    # the check stage's answer not wired: a mismatched version-3 frame decompressed
    "bug_rx_front_check_ignored": (RxFrontCheck, {"ok_stuck": True}, 12,
                                   ("on a check mismatch",)),
    "bug_rx_back_dropped_ready": (RxBackCheck, {"dropped_ready": True}, 10, ("before ready",)),
}


@pytest.mark.parametrize("task", PROOFS)
def test_rx_stage(task):
    wrapper, mode, depth = PROOFS[task]
    run(wrapper(), task, mode=mode, depth=depth, script=[])


@pytest.mark.parametrize("task", COVERS)
def test_rx_stage_cover(task):
    wrapper, depth, traces = COVERS[task]
    res = run(wrapper(cover=True), task, mode="cover", depth=depth, script=[])
    assert len(res.traces) >= traces, res.traces


@pytest.mark.parametrize("task", BUGS)
def test_bug_rx_stage_found(task):
    wrapper, bug, depth, messages = BUGS[task]
    run_bug(wrapper(**bug), task, depth, *messages)


def test_rx_back_max_back_to_back_cover():
    slow_only("a cover about 580 clocks deep")
    # every step solved (about 4 min): 578 is the first step it is reached
    res = run(RxBackMaxBackToBack(), "rx_back_cover_max_b2b", mode="cover",
              depth=2 * MAX_FRAME_BEATS + 8, script=[])
    assert res.traces
