"""Liveness of the RX stages (and the TX feeder), one at a time: while a stage holds
work it makes progress within a stated number of clocks, so that no input (malformed
frames, a reset at any clock) can hang it. The engine's per-frame bound is composed
from these in docs/verification.md ("Liveness: what is proved").

Each check is a stage check of test_formal_rx_stages.py or test_formal_tx_stages.py
(the same neighbour models, their contracts assumed, the stage's own asserted), or for
the DecompressionUnit and the Realigner a wrapper here (any payloads and pieces, any
cfgs and frames), with, added:

- the neighbours' response times as assumptions (``bounded_wait(..., Assume)``): the
  consumer's ready, the source's next beat, a slot freed, at least once every ``r``
  clocks while the stage waits on it (``r = 1``: the downstream always ready);
- a reset at any clock (the stage and its neighbour models reset together, as in the
  engine), so a frame cut by a reset never leaves work that cannot finish;
- the progress property: a wait counter, cleared by progress, below ``bound``;
- a cover of the counter at ``bound - 1`` (the bound is tight: no smaller one holds).

The feed's, the back half's and the front's are proved by k-induction (with the state
invariants their stage checks assert), the others by BMC. The bugs: the same check with
``bound - 1`` (it must fail: the bound is the measured tight value), and a stage that
never sees its consumer's ready (a ready dropped).
"""

import pytest
from amaranth import *

from inceptionn.hw.decompression_unit import DecompressionUnit
from inceptionn.hw.realigner import Realigner
from inceptionn.hw.wire import BEAT_BYTES
from stream_props import (Assume, Counter, Cover, FormalTop, Live, check_live_bug, check_tight,
                          keep_rule, run, run_bug, slow, slow_only, source_rule)
from test_formal_rx_stages import RxBackCheck, RxFeedCheck, RxFrontCheck, free
from test_formal_tx_stages import TxFeederCheck

pytestmark = pytest.mark.solver      # make formal-quick and make formal, not make test


class RxFeedLive(Live, RxFeedCheck):
    """Feed: while it has a frame (loaded to decompress, FIN not written), a beat into
    the unit, a padding beat drained, or FIN written within ``bound`` clocks. The unit's
    ready, the input's next beat (the frame was accepted: its beats are in the input
    slice) and the end-of-input slot's release each come within ``r`` clocks."""

    stage = "feed"

    def live(self, m):
        d = self.dut
        self.respond(m, d.o.valid, self.u_ready, "unit_ready")
        self.respond(m, self.busy, d.hold.beat_valid, "input")
        self.respond(m, d.back.fin.valid, d.back.fin_clear, "fin_slot")
        progress = ((d.o.valid & d.o.ready) | (d.hold.drain & d.hold.beat_valid)
                    | d.front.fin_done)
        return self.busy, progress


class RxBackLive(Live, RxBackCheck):
    """Back half + egress: while a frame is loaded in the pending slot and its last beat
    is not out, an output beat within ``bound`` clocks. The output's ready (the output
    slice's), the header final (the HeaderRestore done), the live input in PASS, the
    Realigner's next beat and the end-of-input slot each come within ``r`` clocks."""

    stage = "back"

    def live(self, m):
        b = self.back
        self.respond(m, self.eg.o.valid, self.o_ready, "out_ready")
        self.respond(m, self.full & ~self.rdy, self.rdy_set, "header_final")
        self.respond(m, self.f_pass, b.hold.beat_valid, "input")
        self.respond(m, C(1), b.words.valid, "words")
        self.respond(m, ~b.feed.fin.valid, self.fin_set, "fin_slot")
        return self.behind != 0, b.o.valid & b.o.ready


class RxFrontLive(Live, RxFrontCheck):
    """Front half: a held frame (the hold's ``done``) is taken (ACT) within ``bound``
    clocks. The matcher's result, the HeaderRestore's done, the unit's and the
    Realigner's ready, the back half's release of the slot, the feed's FIN and the end
    of PASS each come within ``r`` clocks of being waited for."""

    stage = "front"

    def live(self, m):
        d = self.dut
        self.respond(m, self.held_wait & ~self.reported, self.mdone, "matcher")
        self.respond(m, self.ck_busy, self.ck_answer, "check")
        self.respond(m, self.restoring, self.rdone, "restore")
        self.respond(m, self.busy & d.back.pend_ready, self.rel, "release")
        self.respond(m, self.feeding, self.fdone, "fin")
        self.respond(m, d.back.f_pass, d.back.end_live, "pass_end")
        for port, name in ((d.start, "start"), (d.rl_cfg, "rl_cfg")):
            self.respond(m, port.valid, port.ready, f"{name}_ready")
        return self.held_wait, d.hold.take


def _consumer_and_owed(top, m, o, started):
    """The consumer's ready on ``o`` (free, or never with ``stall_ready``) as
    ``top.o_ready``, and ``top.owed``: a frame started (``started``) whose last beat is not
    out yet. With ``tight``, the non-vacuity cover: two frames through, more beats than
    frames."""
    top.o_ready = Signal()
    free(m, top.o_ready)
    m.d.comb += o.ready.eq(0 if top.stall_ready else top.o_ready)
    ins = Counter(m, started, 8, "ins").value
    lasts = Counter(m, o.valid & o.ready & o.payload.last, 8, "lasts").value
    top.owed = Signal()
    m.d.comb += top.owed.eq(ins != lasts)
    if top.tight:
        words = Counter(m, o.valid & o.ready, 8, "words").value
        m.d.comb += Cover((lasts == 2) & (words >= 4))


class _DuCheck(FormalTop):
    """DecompressionUnit (as the engine builds it: no output slice, the Realigner's
    input slice behind it) with any payload (n, r, version, k) and any pieces
    (malformed included: too few or too many bytes, any lanes and counts the feed can
    send: a lane below 32, 0..32 bytes)."""

    stall_ready = False

    def elaborate(self, platform):
        m = Module()
        self.domain(m)
        m.submodules.du = du = self.du = DecompressionUnit(out_slice=False)
        for port in (du.start, du.i):
            free(m, port.valid)
            free(m, port.payload)
            source_rule(m, port, Assume, "start" if port is du.start else "i")
        with m.If(du.i.valid):
            m.d.comb += [Assume(du.i.payload.first < BEAT_BYTES),
                         Assume(du.i.payload.count <= BEAT_BYTES)]
        _consumer_and_owed(self, m, du.o, du.start.valid & du.start.ready)
        return m


class DuLive(Live, _DuCheck):
    """DecompressionUnit: while a payload is started and its last word is not out, a
    piece taken or a word out within ``bound`` clocks; each next piece within ``r``
    clocks while the unit has a payload, the consumer's ready (the Realigner's input
    slice's) within ``r`` clocks, whether or not a word is offered."""

    stage = "du"

    def live(self, m):
        du = self.du
        # every stage moves only with the consumer's ready, so it is wanted at any time
        self.respond(m, C(1), self.o_ready, "out_ready")
        self.respond(m, self.owed, du.i.valid, "pieces")
        progress = (du.i.valid & du.i.ready) | (du.o.valid & du.o.ready)
        return self.owed, progress


class _RealignerCheck(FormalTop):
    """The Realigner as RX uses it (insert = P mod 32, skip 0, any length): any cfg
    entries and any input frames (tkeep as AXI-stream has it, malformed lengths
    included: an input shorter or longer than the cfg's length)."""

    stall_ready = False

    def elaborate(self, platform):
        m = Module()
        self.domain(m)
        m.submodules.rl = rl = self.rl = Realigner()
        for port, name in ((rl.cfg, "cfg"), (rl.i, "i")):
            free(m, port.valid)
            free(m, port.payload)
            source_rule(m, port, Assume, name)
        keep_rule(m, rl.i, "i", Assume)
        m.d.comb += Assume(rl.cfg.payload.skip == 0)
        _consumer_and_owed(self, m, rl.o, rl.cfg.valid & rl.cfg.ready)
        return m


class RealignerLive(Live, _RealignerCheck):
    """Realigner: while a frame's cfg is taken and its last beat is not out, an input
    beat taken or a beat out within ``bound`` clocks; the next input beat within ``r``
    clocks while a frame is owed, the output's ready within ``r`` clocks of a beat."""

    stage = "realign"

    def live(self, m):
        rl = self.rl
        self.respond(m, rl.o.valid, self.o_ready, "out_ready")
        self.respond(m, self.owed, rl.i.valid, "beats")
        progress = (rl.i.valid & rl.i.ready) | (rl.o.valid & rl.o.ready)
        return self.owed, progress


class TxFeederLive(Live, TxFeederCheck):
    """TX feeder (with its clenq of 8): while a frame's shim entry is there (popped at
    the frame's end), a vector into the AlignmentUnit or a group taken within ``bound``
    clocks. The AlignmentUnit's ready, the next group, the tail entry and clenq's pop
    each within ``r`` clocks. Any groups, shims and tails (a tail in the last group or
    a vector of its own)."""

    stage = "tx_feeder"

    def __init__(self, bound, r=1, reset=True, tight=False, stall=False):
        TxFeederCheck.__init__(self)
        Live.__init__(self, bound, r, reset, tight, stall)

    def live(self, m):
        d = self.dut
        self.respond(m, d.o.valid, self.o_ready, "align_ready")
        self.respond(m, d.shim.valid, d.groups.valid, "groups")
        self.respond(m, d.shim.valid, d.tail.valid, "tail")
        self.respond(m, self.clenq.o.valid, self.clenq_pop, "clenq_pop")
        progress = (d.o.valid & d.o.ready) | (d.groups.valid & d.groups.ready)
        if self.tight:
            # non-vacuity: two frames through (their lengths pushed)
            ends = Counter(m, self.clenq.i.valid & self.clenq.i.ready, 4, "ends").value
            m.d.comb += Cover(ends == 2)
        return d.shim.valid, progress


# ---- the checks ------------------------------------------------------------------------

# The matcher's, the HeaderRestore's and the check stage's response times in the engine
# (their LATENCY: the matcher's result 5 clocks after the beat that decides it, which for
# a frame of 1 or 2 beats is the hold's done beat; the checksum 3 clocks after start; the
# version-3 check word 3 clocks after go, ShimCheck's two stages), the others at once.
ENGINE_R = {None: 1, "matcher": 5, "restore": 3, "check": 3}

# task: (wrapper, r, bound, depth). The bounds are the tight ones (the covers below reach
# bound - 1, the bugs show bound - 1 fails); r = 1 is the downstream always ready. The
# feed's, the back half's and the front's are proved by k-induction (depth: k; their
# invariants, each stage's state against its neighbour models', are asserted in the
# stage checks), the others are BMC.
PROVE = {"live_rx_feed", "live_rx_feed_r2", "live_rx_feed_r3", "live_rx_front",
         "live_rx_front_engine", "live_rx_front_r2", "live_rx_front_r3", "live_rx_back",
         "live_rx_back_r2"}
LIVE = {
    "live_rx_feed": (RxFeedLive, 1, 2, 4),
    "live_rx_back": (RxBackLive, 1, 2, 6),
    "live_rx_front": (RxFrontLive, 1, 6, 7),
    "live_rx_front_engine": (RxFrontLive, ENGINE_R, 11, 12),
    "live_rx_du": (DuLive, 1, 7, slow(12, 18)),
    "live_rx_realign": (RealignerLive, 1, 4, slow(12, 24)),
    "live_tx_feeder": (TxFeederLive, 1, 1, slow(16, 30)),
}
# neighbours slower (each response within 2 or 3 clocks): how the bounds grow (make
# formal)
LIVE_SLOWER = {
    "live_rx_feed_r2": (RxFeedLive, 2, 4, 6),
    "live_rx_feed_r3": (RxFeedLive, 3, 6, 6),
    "live_rx_back_r2": (RxBackLive, 2, 4, 12),
    "live_rx_front_r2": (RxFrontLive, 2, 7, 9),
    "live_rx_front_r3": (RxFrontLive, 3, 9, 14),
    "live_tx_feeder_r2": (TxFeederLive, 2, 2, 20),
}
# the tightness covers (the wait counter reaches bound - 1)
TIGHT = {f"tight_{k[5:]}": (w, r, b, 16 if w is DuLive else 12)
         for k, (w, r, b, _) in LIVE.items()}
# injected bugs: the bound one below the tight one (for the slower neighbours too), and
# a stage that never sees its consumer's ready (a dropped ready). task: (wrapper,
# kwargs, depth)
def _bound_bugs(checks):
    # depth: past the step where the counter first reaches b - 1 (the tightness cover's)
    # (a bound of 1 has none below it: a stalled variant shows that check can fail)
    return {f"bug_{k}_bound": (w, {"bound": b - 1, "r": r}, b + (3 if w is DuLive else 6))
            for k, (w, r, b, _) in checks.items() if b > 1}


BUGS = {
    **_bound_bugs(LIVE),
    "bug_live_rx_feed_stall": (RxFeedLive, {"bound": 2, "stall": True}, 8),
    "bug_live_rx_back_stall": (RxBackLive, {"bound": 2, "stall": True}, 8),
    "bug_live_rx_du_stall": (DuLive, {"bound": 7, "stall": True}, 10),
    "bug_live_rx_realign_stall": (RealignerLive, {"bound": 4, "stall": True}, 10),
    "bug_live_tx_feeder_stall": (TxFeederLive, {"bound": 1, "stall": True}, 8),
}


@pytest.mark.parametrize("task", LIVE)
def test_live(task):
    wrapper, r, bound, depth = LIVE[task]
    run(wrapper(bound, r=r), task, mode="prove" if task in PROVE else "bmc", depth=depth,
        script=[])


@pytest.mark.parametrize("task", LIVE_SLOWER)
def test_live_slower_neighbours(task):
    slow_only("bounds with neighbours answering within 2 or 3 clocks")
    wrapper, r, bound, depth = LIVE_SLOWER[task]
    run(wrapper(bound, r=r), task, mode="prove" if task in PROVE else "bmc", depth=depth,
        script=[])


@pytest.mark.parametrize("task", TIGHT)
def test_live_bound_tight(task):
    check_tight(task, *TIGHT[task])


BUGS_SLOWER = _bound_bugs(LIVE_SLOWER)
# make test keeps one (2 s) to show the flow finds a stalled stage; the others, 2 to 17 s
# each, run under make formal with the tightness covers.
QUICK_BUGS = {"bug_live_rx_feed_stall"}


@pytest.mark.parametrize("task", BUGS)
def test_bug_live_found(task):
    check_live_bug(task, *BUGS[task], QUICK_BUGS)


@pytest.mark.parametrize("task", BUGS_SLOWER)
def test_bug_live_slower_found(task):
    slow_only("bounds with neighbours answering within 2 or 3 clocks")
    wrapper, kw, depth = BUGS_SLOWER[task]
    run_bug(wrapper(**kw), task, depth, "no progress in")
