"""Liveness of the TX stages, one at a time (the feeder's is in test_formal_liveness.py,
the egress's latency in test_formal_tx_stages.py): while a stage holds work it makes
progress within a stated number of clocks. The engine's per-frame bound is composed
from these in docs/verification.md ("The TX engine's bound per frame").

As for RX (``Live`` in stream_props.py): each wrapper gives the stage any inputs its
neighbours can send (held until taken), the neighbours' response times as assumptions
(``r = 1``: the downstream always ready), a reset at any clock, and the progress
property (a wait counter, cleared by progress, below ``bound``); with ``tight``, a cover
of the counter at ``bound - 1``. The bugs: the bound one below, and a stage that never
sees its consumer's ready.
"""

import pytest
from amaranth import *

from inceptionn.hw.alignment_unit import AlignmentUnit
from inceptionn.hw.compression_unit import CompressionUnit
from inceptionn.hw.tx.comp_writer import CompWriter
from inceptionn.hw.tx.dispatcher import Dispatcher
from inceptionn.hw.tx.finisher import Finisher
from inceptionn.hw.tx.front import Front
from inceptionn.hw.tx.group_former import GroupFormer
from inceptionn.hw.tx.ingress import Ingress
from stream_props import (Assert, Assume, Counter, Cover, FormalTop, Live, check_live_bug,
                          check_tight, keep_rule, run, slow, slow_only, source_rule)
from test_formal_rx_stages import free

pytestmark = pytest.mark.solver      # make formal-quick and make formal, not make test


class _Build(FormalTop):
    """Owns the domain; ``build(m)`` (the stage check's) adds the stage and its models."""

    def elaborate(self, platform):
        m = Module()
        self.domain(m)
        self.build(m)
        return m


class _Stage(Live, _Build):
    """A stage check: ``build(m)`` instantiates the stage and its neighbours' models,
    ``live(m)`` (``Live``) gives its work and progress."""

    def source(self, m, port, name, beats=False):
        """Any entries on ``port``, held until taken (``beats``: tkeep as AXI-stream)."""
        free(m, port.valid)
        free(m, port.payload)
        source_rule(m, port, Assume, name)
        if beats:
            keep_rule(m, port, name, Assume)

    def consumer(self, m, port, name):
        """The consumer's ready on ``port`` (free; never with ``stall``), returned."""
        r = self.room(m, name)
        m.d.comb += port.ready.eq(0 if self.stall_ready else r)
        return r

    def room(self, m, name):
        """A free ready the stage reads (a FIFO's room, a ring entry), returned."""
        r = Signal(name=f"{name}_ready")
        free(m, r)
        return r


class IngressLive(_Stage):
    """Ingress (with its PacketMatcher): while a beat is offered, or a frame is started
    whose MatchInfo is not pushed, a beat taken or an info pushed within ``bound``
    clocks. beatq's room and a ring entry while a beat is offered, and a started frame's
    next beat, each within ``r`` clocks. Any beats, any configuration."""

    stage = "tx_ingress"

    def build(self, m):
        m.submodules.dut = d = self.dut = Ingress(4)
        self.source(m, d.i, "i", beats=True)
        self.beat_room = self.consumer(m, d.beats, "beatq")
        for s in (d.store.w_room, d.store.wp, d.enable, d.k, d.dscp, d.codec):
            free(m, s)
        m.d.comb += [d.info.ready.eq(1), d.cfg.ready.eq(1)]      # strobes

    def live(self, m):
        d = self.dut
        fire = d.i.valid & d.i.ready
        open_ = Signal(name="frame_open")
        with m.If(fire):
            m.d.sync += open_.eq(~d.i.payload.last)
        starts = Counter(m, fire & ~open_, 8, "starts").value
        infos = Counter(m, d.info.valid, 8, "infos").value
        self.respond(m, d.i.valid, self.beat_room, "beatq")
        self.respond(m, d.i.valid, d.store.w_room, "ring")
        self.respond(m, open_, d.i.valid, "input")
        if self.tight:
            m.d.comb += Cover(infos == 2)
        return d.i.valid | (starts != infos), fire | d.info.valid


class DispatcherLive(_Stage):
    """Dispatcher: while a frame's info and cfg are both there, it is dispatched within
    ``bound`` clocks; modeq's, the Realigner's cfg, kq's and shimq's room each within
    ``r`` clocks of a frame waiting."""

    stage = "tx_dispatcher"

    def build(self, m):
        m.submodules.dut = d = self.dut = Dispatcher()
        self.source(m, d.info, "info")
        self.source(m, d.cfg, "cfg")
        self.rooms = {n: (self.consumer(m, getattr(d, n), n) if n == "mode" else
                          self.room(m, n)) for n in ("mode", "rl_cfg", "k", "shim")}
        for n in ("rl_cfg", "k", "shim"):
            m.d.comb += getattr(d, n).ready.eq(self.rooms[n])

    def live(self, m):
        d = self.dut
        work = d.info.valid & d.cfg.valid
        for n, r in self.rooms.items():
            self.respond(m, work, r, f"{n}_room")
        return work, d.info.ready


class FrontLive(_Stage):
    """Front (with its Realigner and checksums): while a frame's mode is loaded and its
    last beat not taken, or a compressed frame's last payload beat is not out of the
    Realigner, a beat taken or a payload beat out within ``bound`` clocks. Its next beat (the frame
    was dispatched, its beats enter beatq), frontq's room for its last beat and rs_rl's
    ready each within ``r`` clocks. The dispatcher's contract: a compressed frame's
    Realigner cfg is taken before its mode reaches the front (both are written in the
    dispatching clock, the mode through modeq)."""

    stage = "tx_front"

    def build(self, m):
        m.submodules.dut = d = self.dut = Front(9)
        self.source(m, d.beats, "beats", beats=True)
        self.source(m, d.mode, "mode")
        self.source(m, d.rl_cfg, "rl_cfg")
        self.o_ready = self.consumer(m, d.o, "rs_rl")
        self.res_room = self.room(m, "frontq")
        m.d.comb += [d.result.ready.eq(self.res_room), d.hsum.ready.eq(1), d.ck.ready.eq(1)]
        cfgs = Counter(m, d.rl_cfg.valid & d.rl_cfg.ready, 8, "cfgs").value
        cmodes = Counter(m, d.mode.valid & d.mode.ready & d.mode.payload.compress, 8,
                         "cmodes").value
        with m.If(d.mode.valid & d.mode.payload.compress):
            m.d.comb += Assume(cfgs != cmodes)

    def live(self, m):
        d = self.dut
        pop = d.beats.valid & d.beats.ready
        end = pop & d.beats.payload.last
        act = Signal(name="active")         # as the front's f_active, and its mode's compress
        comp = Signal(name="active_compress")
        with m.If(end):
            m.d.sync += act.eq(0)
        with m.If(d.mode.valid & d.mode.ready):
            m.d.sync += [act.eq(1), comp.eq(d.mode.payload.compress)]
        out = d.o.valid & d.o.ready
        # compressed frames in whose last payload beat is not out of the Realigner yet
        rl_in = Counter(m, end & comp, 8, "rl_frames").value
        rl_out = Counter(m, out & d.o.payload.last, 8, "rl_lasts").value
        self.respond(m, act, d.beats.valid, "beats")
        self.respond(m, act & d.beats.valid & d.beats.payload.last, self.res_room, "frontq")
        self.respond(m, d.o.valid, self.o_ready, "rs_rl")
        if self.tight:
            m.d.comb += Cover(Counter(m, end, 4, "ends").value == 2)
        return act | (rl_in != rl_out), pop | out


class GroupFormerLive(_Stage):
    """Group former: while it holds a beat, a group out or a beat taken within ``bound``
    clocks. The frame's next beat (while the held one is not its last), the frame's kq
    entry, tailq's room and the CompressionUnit's ready each within ``r`` clocks."""

    stage = "tx_grouper"

    def build(self, m):
        m.submodules.dut = d = self.dut = GroupFormer()
        self.source(m, d.i, "i", beats=True)
        self.source(m, d.k, "k")
        self.o_ready = self.consumer(m, d.o, "cu")
        self.tail_room = self.room(m, "tailq")
        m.d.comb += d.tail.ready.eq(self.tail_room)

    def live(self, m):
        d = self.dut
        held = d.formal_held
        self.respond(m, held & ~d.formal_last, d.i.valid, "beats")
        self.respond(m, held, d.k.valid, "kq")
        self.respond(m, held, self.tail_room, "tailq")
        self.respond(m, d.o.valid, self.o_ready, "cu")
        return held, (d.o.valid & d.o.ready) | (d.i.valid & d.i.ready)


class CuLive(_Stage):
    """CompressionUnit: while a group is inside, a group out within ``bound`` clocks;
    the feeder's ready within ``r`` clocks, wanted at any time (the pipeline moves only
    with it). Any groups, k and codec, arriving at any time."""

    stage = "tx_cu"

    def build(self, m):
        m.submodules.dut = d = self.dut = CompressionUnit()
        self.source(m, d.i, "i")
        free(m, d.k)
        free(m, d.v2)
        self.o_ready = self.consumer(m, d.o, "feeder")

    def live(self, m):
        d = self.dut
        ins = Counter(m, d.i.valid & d.i.ready, 8, "ins").value
        outs = Counter(m, d.o.valid & d.o.ready, 8, "outs").value
        # the induction's invariant: the groups inside are the pipeline's valid bits
        m.d.comb += Assert((ins - outs)[:8] == d.formal_level, "cu: groups inside")
        self.respond(m, C(1), self.o_ready, "feeder")
        if self.tight:
            m.d.comb += Cover(outs == 2)
        return ins != outs, d.o.valid & d.o.ready


class AuLive(_Stage):
    """AlignmentUnit (as the engine builds it): while a packet is open (a vector taken,
    not its last) or a packet with bytes has ended and its last beat is not out, a
    vector taken or a beat out within ``bound`` clocks. The next vector while a packet is
    open, and the comp writer's ready, each within ``r`` clocks. Any vectors the feeder
    sends: up to 34 bytes (35 for a packet's first, a fill vector)."""

    stage = "tx_au"

    def build(self, m):
        m.submodules.dut = d = self.dut = AlignmentUnit(clear_stale=False)
        self.source(m, d.i, "i")
        self.o_ready = self.consumer(m, d.o, "cwriter")
        self.open = Signal(name="pkt_open")
        v = d.i.payload
        with m.If(d.i.valid):
            m.d.comb += Assume(v.length <= Mux(v.fill, 35, 34))
            m.d.comb += Assume(~v.fill | ~self.open)

    def live(self, m):
        d = self.dut
        v = d.i.payload
        acc = d.i.valid & d.i.ready
        emit = d.o.valid & d.o.ready
        has = Signal(name="pkt_has_bytes")
        with m.If(acc):
            m.d.sync += [self.open.eq(~v.last), has.eq((has | (v.length != 0)) & ~v.last)]
        ends = Counter(m, acc & v.last & (has | (v.length != 0)), 8, "ends").value
        lasts = Counter(m, emit & d.o.payload.last, 8, "lasts").value
        # the induction's invariants: the model's packet against the unit's ring
        m.d.comb += [Assert(has == d.formal_bytes, "au: open bytes out of step"),
                     Assert(~has | self.open, "au: bytes without a packet"),
                     Assert((ends - lasts)[:8] == d.formal_lasts, "au: packets owed")]
        self.respond(m, self.open, d.i.valid, "vectors")
        self.respond(m, d.o.valid, self.o_ready, "cwriter")
        if self.tight:
            m.d.comb += Cover(lasts == 2)
        return self.open | (ends != lasts), acc | emit


class CompWriterLive(_Stage):
    """Comp writer: a beat offered is taken within ``bound`` clocks; compq's room and a
    ring entry each within ``r`` clocks of a beat waiting."""

    stage = "tx_cwriter"

    def build(self, m):
        m.submodules.dut = d = self.dut = CompWriter(4)
        self.source(m, d.i, "i", beats=True)
        self.region_room = self.consumer(m, d.region, "compq")
        free(m, d.store.w_room)
        free(m, d.store.wp)

    def live(self, m):
        d = self.dut
        self.respond(m, d.i.valid, self.region_room, "compq")
        self.respond(m, d.i.valid, d.store.w_room, "ring")
        return d.i.valid, d.i.valid & d.i.ready


class FinisherLive(_Stage):
    """Finisher: while a frame's entries are all there, or a frame is taken and its
    descriptor not pushed, a frame taken or a descriptor pushed within ``bound``
    clocks; descq's room within ``r`` clocks of a descriptor. Any entries."""

    stage = "tx_finisher"

    def build(self, m):
        m.submodules.dut = d = self.dut = Finisher(9)
        for port in ("front", "hsum", "ck", "clen", "dsum", "region"):
            self.source(m, getattr(d, port), port)
        self.desc_room = self.consumer(m, d.desc, "descq")

    def live(self, m):
        d = self.dut
        comp = d.front.payload.compress
        entries = d.front.valid & d.hsum.valid & d.ck.valid & (
            ~comp | (d.clen.valid & d.dsum.valid & d.region.valid))
        take = d.front.valid & d.front.ready
        push = d.desc.valid & d.desc.ready
        self.respond(m, d.desc.valid, self.desc_room, "descq")
        if self.tight:
            m.d.comb += Cover(Counter(m, push, 4, "pushes").value == 2)
        return d.formal_busy | entries, take | push


# ---- the checks ------------------------------------------------------------------------

# task: (wrapper, r, bound, depth, prove). The bounds are the tight ones (the covers reach
# bound - 1, the bound bugs show bound - 1 fails); r = 1: the downstream always ready.
LIVE = {
    "live_tx_ingress": (IngressLive, 1, 5, slow(10, 20), False),
    "live_tx_dispatcher": (DispatcherLive, 1, 1, 2, True),
    "live_tx_front": (FrontLive, 1, 6, slow(8, 20), False),
    "live_tx_grouper": (GroupFormerLive, 1, 1, 2, True),
    "live_tx_cu": (CuLive, 1, 5, 6, True),
    "live_tx_au": (AuLive, 1, 2, 4, True),
    "live_tx_cwriter": (CompWriterLive, 1, 1, 2, True),
    "live_tx_finisher": (FinisherLive, 1, 8, 10, True),
}
# neighbours slower (each response within 2 or 3 clocks): the bounds grow by r - 1 (make
# formal)
LIVE_SLOWER = {
    "live_tx_cu_r2": (CuLive, 2, 6, 8, True),
    "live_tx_cu_r3": (CuLive, 3, 7, 9, True),
    "live_tx_au_r2": (AuLive, 2, 3, 6, True),
    "live_tx_finisher_r2": (FinisherLive, 2, 9, 12, True),
    "live_tx_finisher_r3": (FinisherLive, 3, 10, 13, True),
}
# the step where the counter first reaches bound - 1, where later than 2 bound (the front:
# three short frames queued in its Realigner's input slice)
REACH = {"live_tx_front": 14}
TIGHT = {f"tight_{k[5:]}": (w, r, b, max(2 * b + 8, REACH.get(k, 0) + 2))
         for k, (w, r, b, _, _) in {**LIVE, **LIVE_SLOWER}.items()}
BUGS = {
    **{f"bug_{k}_bound": (w, {"bound": b - 1, "r": r}, max(b + 6, REACH.get(k, 0) + 2))
       for k, (w, r, b, _, _) in {**LIVE, **LIVE_SLOWER}.items() if b > 1},
    # (the front's Realigner and its input slice take a few beats before it stalls)
    **{f"bug_{k}_stall": (w, {"bound": b, "r": r, "stall": True},
                          14 if w is FrontLive else b + 6)
       for k, (w, r, b, _, _) in LIVE.items()},
}


@pytest.mark.parametrize("task", LIVE)
def test_live(task):
    wrapper, r, bound, depth, prove = LIVE[task]
    run(wrapper(bound, r=r), task, mode="prove" if prove else "bmc", depth=depth, script=[])


# make test runs the progress checks and one bug (about 22 s in all); the covers and the
# other bugs (1-7 s each) run under make formal.
QUICK_BUGS = {"bug_live_tx_dispatcher_stall"}


@pytest.mark.parametrize("task", LIVE_SLOWER)
def test_live_slower_neighbours(task):
    slow_only("bounds with neighbours answering within 2 or 3 clocks")
    wrapper, r, bound, depth, prove = LIVE_SLOWER[task]
    run(wrapper(bound, r=r), task, mode="prove" if prove else "bmc", depth=depth, script=[])


@pytest.mark.parametrize("task", TIGHT)
def test_live_bound_tight(task):
    check_tight(task, *TIGHT[task])


@pytest.mark.parametrize("task", BUGS)
def test_bug_live_found(task):
    check_live_bug(task, *BUGS[task], QUICK_BUGS)
