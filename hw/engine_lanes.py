"""An engine at a wider beat: lanes of the 256-bit engine taking whole frames in turn.

At 256 bits an engine is itself (``wide_engine`` returns it); at W = 256 * N bits (512
for the 100 GbE NICs, N = 2) the input's frames go in turn to N lanes, each the 256-bit
engine, unchanged, behind a FIFO and a width adapter, and come out in the order they came
in (docs/engine-lanes.md: why lanes and not two groups a clock inside one engine)::

    i ─► turn ─┬─► inq[0] (W) ─► W→256 ─► engine ─► 256→W ─► outq[0] (W) ─┬─► merge ─► slice ─► o
               ├─► inq[1] ...                                             │    ▲
               ├─► byq (W: the bypass lane) ──────────────────────────────┤    │
               └─► order FIFO (lane or bypass, dropped) ───────────────────────┘

- turn: frame j goes to lane j mod N, every beat of it; the lane's input FIFO takes it
  at a beat a clock while the lane drains at 256 bits a clock, so two frames in flight
  on two lanes keep W bits a clock in. The frame's configuration (the engine's
  configuration inputs, as they are when its first beat is taken) goes into the lane's
  ``cfgq`` and is what the lane's engine sees until it has sampled it (TX samples with
  the frame's first beat in; RX behind its input slice, so its lanes keep the entry
  until the engine counts the frame: ``until_counted``), so a frame keeps the
  configuration it came in with at any width. Frames that the engine surely forwards
  unchanged take the bypass lane instead (``bypass``: a W-bit FIFO, told from the first
  beat, hw/lane_bypass.py) and take no turn; TX's drops a frame longer than the engine
  keeps, as the engine does.
- order FIFO: one entry a frame, the lane it went to; for TX, whether the engine drops
  it (longer than MAX_FRAME_BYTES, which the lane's engine drops: counted at the input
  in W-bit beats). RX writes the entry with the frame's first beat (RX is cut-through:
  a frame's first beats can come out before its last went in); TX with its last (the
  length is then known; TX is store-and-forward, so the entry is there before the
  frame's first output beat).
- merge: the head's lane's output FIFO, a frame at a time; a dropped frame's entry is
  popped with nothing taken. Each lane's output FIFO lets a lane run ahead while the
  merge waits on another, so N lanes at half rate make one W-bit beat a clock.
- counters: each the sum of the lanes' (registered: one clock behind the lanes').

The wire is the 256-bit engine's byte for byte: every frame goes through one unchanged
engine; only the beat width around it differs.
"""

from amaranth import *
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .axis import axis_signature, beat_layout
from .corundum.engine_path import engine_ports
from .corundum.width import Downsizer, Upsizer
from .engine_instance import EngineInstance
from .lane_bypass import rx_sure_bypass, tx_sure_bypass
from .primitives import FifoSlice, StreamFifo
from .short_frame import SHORT_BEAT_BITS, ShortFrameEngine, tx_short_takes
from .wire import BEAT_BITS, MAX_FRAME_BYTES

__all__ = ["EngineLanes", "CompressionEngineLanes", "DecompressionEngineLanes", "wide_engine"]

# Entries of a lane's input and output FIFOs (W-bit beats): a jumbo frame is 141 beats
# at 512 bits, and a lane holds about half of it on the way in (taken at W, drained at
# 256) and up to all of it on the way out (made while the merge waits on the other lane);
# 512 entries of 578 bits are 9 block RAMs (512 x 72) each, as 256 would be.
LANE_FIFO_DEPTH = 512
# Frames between the input and the output: the lanes' FIFOs and the engines' own
# (short TX frames leave about 80 clocks after their first beat; at 512 bits a 64-byte
# frame comes every clock).
ORDER_DEPTH = 256
CFG_DEPTH = 64


def _narrow(st):
    """An engine-side stream's fields as a ``nic_beat`` payload's (no side-band)."""
    return [st.data, st.keep, st.last, st.user]


class EngineLanes(wiring.Component):
    """``i``/``o``: W-bit streams (``beat_layout(W)``); the engine's configuration inputs
    and counter outputs under their own names. ``module``: the 256-bit engine's Verilog
    module, instantiated once per lane (``EngineInstance``); ``drops``: the engine drops
    frames longer than MAX_FRAME_BYTES (TX)."""

    def __init__(self, module, engine_cls, beat_bits, *, drops, bypass=None,
                 until_counted=False, fifo_depth=LANE_FIFO_DEPTH, order_depth=ORDER_DEPTH,
                 cfg_depth=CFG_DEPTH, engine=None, lane_bits=BEAT_BITS,
                 max_frame_bytes=MAX_FRAME_BYTES, short=None):
        # bypass: None (every frame to an engine lane), or ``f(data, cfg)`` -> 1 when the
        # engine surely forwards the frame whose first beat is ``data`` unchanged under
        # ``cfg`` (a view of the configuration inputs): such a frame takes the bypass lane.
        # short: None, or (``make``, ``takes``): a one-beat frame whose beat ``takes(data)``
        # accepts (and that is not bypassed) goes to the engine ``make()`` builds (TX:
        # hw/short_frame.py), a frame a clock, instead of an engine lane.
        # until_counted: a lane's engine keeps its frame's configuration until its
        # frames_in counts the frame (see _lane; RX), else until the frame's last beat
        # went in (TX).
        # fifo_depth, order_depth, cfg_depth, engine, lane_bits, max_frame_bytes: the
        # formal checks' and tests' small FIFOs and stand-in engine (a callable returning
        # a component with the engine's ports other than its streams' width) at a narrow
        # width, where frames longer than the engine keeps are a few beats; the same code.
        self._bypass = bypass
        self._short = short
        self.until_counted = until_counted
        self._depths = (fifo_depth, order_depth, cfg_depth)
        self._engine = engine or (lambda: EngineInstance(module, engine_cls))
        self.lane_bits, self.max_frame_bytes = lane_bits, max_frame_bytes
        lanes = beat_bits // lane_bits
        if beat_bits % lane_bits or lanes < 2 or lanes & (lanes - 1):
            self._MustUse__silence = True      # a refused block is not an unused one
            raise ValueError(f"lanes need a beat of {lane_bits} x 2^n bits (n >= 1), "
                             f"got {beat_bits}")
        self._module, self._engine_cls = module, engine_cls
        self.beat_bits, self.lanes, self.drops = beat_bits, lanes, drops
        super().__init__({"i": In(axis_signature(beat_bits)), "o": Out(axis_signature(beat_bits)),
                          **engine_ports(engine_cls)})

    def elaborate(self, platform):
        m = Module()
        n, w = self.lanes, self.beat_bits
        byp = self._bypass is not None
        short = self._short is not None
        ports = engine_ports(self._engine_cls)
        cfg_names = [name for name, mb in ports.items() if mb.flow == In]
        cnt_names = [name for name, mb in ports.items() if mb.flow == Out]
        cfg_layout = data.StructLayout({name: ports[name].shape for name in cfg_names})
        # lane n (when there is a bypass lane): the bypass FIFO; lane n + 1 (with a short
        # engine): the short engine.
        if short and not byp:
            raise ValueError("a short-frame engine needs the bypass lane's classify slice")
        order_layout = data.StructLayout({"lane": range(n + byp + short), "dropped": 1})

        fifo_depth, order_depth, cfg_depth = self._depths
        m.submodules.order = order = StreamFifo(order_layout, order_depth, fast=True)
        limit = self.max_frame_bytes // (w // 8)  # the beats of the longest frame kept
        m.submodules.out_slice = out_slice = FifoSlice(beat_layout(w))
        wiring.connect(m, out_slice.o, wiring.flipped(self.o))

        engs, inqs, outqs, cfgqs = [], [], [], []
        for j in range(n):
            eng = self._engine()
            inq = StreamFifo(beat_layout(w), fifo_depth, fast=True)
            outq = StreamFifo(beat_layout(w), fifo_depth, fast=True)
            cfgq = StreamFifo(cfg_layout, cfg_depth, fast=True)
            down, up = Downsizer(w, self.lane_bits, 0), Upsizer(self.lane_bits, w, 0)
            for name, sub in (("engine", eng), ("inq", inq), ("outq", outq), ("cfgq", cfgq),
                              ("down", down), ("up", up)):
                m.submodules[f"{name}{j}"] = sub
            self._lane(m, inq, down, cfgq, eng, up, outq, cfg_names)
            engs.append(eng)
            inqs.append(inq)
            outqs.append(outq)
            cfgqs.append(cfgq)

        # The input's beat, its frame's configuration and whether it takes the bypass lane.
        s_valid, s_ready = Signal(), Signal()
        s_beat, s_cfg, s_byp = Signal(beat_layout(w)), Signal(cfg_layout), Signal()
        s_short = Signal()
        if byp:
            self._classify(m, cfg_layout, cfg_names, s_valid, s_ready, s_beat, s_cfg, s_byp,
                           s_short)
        else:
            m.d.comb += [s_valid.eq(self.i.valid), self.i.ready.eq(s_ready),
                         s_beat.eq(self.i.payload)]
            for name in cfg_names:
                m.d.comb += s_cfg[name].eq(getattr(self, name))

        # turn: the engine lane of the frame now coming in (frames for the bypass lane
        # take no turn); its first beat's configuration.
        lane = Signal(range(n))
        first = Signal(init=1)
        beats = Signal(range(limit + 2))          # this frame's so far, saturating
        lane_rdy = Signal()
        eng_rdy = Array(q.i.ready for q in inqs)[lane] & Array(q.i.ready for q in cfgqs)[lane]
        # A bypassed frame longer than the engine keeps (TX, ``drops``) is dropped as the
        # engine drops it: its first ``limit`` beats go in, the last of them marked last,
        # the rest are taken and let go, and the merge empties the kept ones unsent.
        swallow = (beats >= limit) if self.drops else C(0)
        if byp:
            m.submodules.byq = byq = StreamFifo(beat_layout(w), fifo_depth, fast=True)
            outqs.append(byq)
            m.d.comb += [
                byq.i.payload.eq(s_beat),
                byq.i.valid.eq(s_valid & lane_rdy & s_byp & ~swallow),
            ]
            if self.drops:
                m.d.comb += byq.i.payload.last.eq(s_beat.last | (beats == limit - 1))
            if short:
                make, _ = self._short
                m.submodules.short = sh = make()
                outqs.append(sh)
                m.d.comb += [sh.i.payload.eq(s_beat),
                             sh.i.valid.eq(s_valid & lane_rdy & ~s_byp & s_short)]
                for name in cfg_names:
                    m.d.comb += getattr(sh, name).eq(s_cfg[name])
                eng_rdy = Mux(s_short, sh.i.ready, eng_rdy)
            eng_rdy = Mux(s_byp, byq.i.ready | swallow, eng_rdy)
        m.d.comb += [lane_rdy.eq(eng_rdy & order.i.ready), s_ready.eq(lane_rdy)]
        took = s_valid & s_ready
        for j in range(n):
            m.d.comb += [
                inqs[j].i.payload.eq(s_beat),
                inqs[j].i.valid.eq(s_valid & lane_rdy & (lane == j) & ~s_byp & ~s_short),
                cfgqs[j].i.valid.eq(took & first & (lane == j) & ~s_byp & ~s_short),
                cfgqs[j].i.payload.eq(s_cfg),
            ]
        write_at = s_beat.last if self.drops else first
        m.d.comb += [
            order.i.payload.lane.eq(Mux(s_byp, n, Mux(s_short, n + 1, lane)) if byp else lane),
            order.i.payload.dropped.eq(swallow),
            order.i.valid.eq(took & write_at),
        ]
        with m.If(took):
            m.d.sync += first.eq(s_beat.last)
            with m.If(s_beat.last):
                m.d.sync += beats.eq(0)
                with m.If(~s_byp & ~s_short):
                    m.d.sync += lane.eq(lane + 1)     # n a power of two: wraps
            with m.Elif(beats <= limit):
                m.d.sync += beats.eq(beats + 1)

        # merge: the head's lane, a frame at a time; a dropped frame's entry goes alone
        # (an engine lane's: its engine dropped it) or with the kept beats it leaves in the
        # bypass FIFO, emptied unsent.
        head = order.o
        sel = head.payload.lane
        pass_on = head.valid & ~head.payload.dropped
        empty = head.valid & head.payload.dropped & ((sel == n) if byp and self.drops else 0)
        src_valid = Signal()
        src = Signal(beat_layout(w))
        with m.Switch(sel):
            for j, q in enumerate(outqs):
                with m.Case(j):
                    m.d.comb += [src_valid.eq(q.o.valid), src.eq(q.o.payload)]
        o = out_slice.i
        m.d.comb += [
            o.payload.eq(src),
            o.valid.eq(pass_on & src_valid),
            head.ready.eq(head.valid & Mux(head.payload.dropped,
                                           ~empty | (src_valid & src.last),
                                           o.ready & src_valid & src.last)),
        ]
        for j, q in enumerate(outqs):
            m.d.comb += q.o.ready.eq((pass_on & o.ready | empty) & (sel == j))

        # counters: the lanes' sums, from registers; the bypass lane's frames count in
        # frames_in and bypassed as they come in (RX: with the first beat; TX: with the
        # last, as its engine counts, and in dropped instead when too long), in
        # frames_out as they leave.
        extra = {}
        if byp:
            byp_in, byp_out = Signal(32), Signal(32)
            with m.If(took & (s_beat.last if self.drops else first) & s_byp):
                m.d.sync += byp_in.eq(byp_in + 1)
            with m.If(byq.o.valid & byq.o.ready & byq.o.payload.last & pass_on):
                m.d.sync += byp_out.eq(byp_out + 1)
            extra = {"frames_in": byp_in, "bypassed": byp_in, "frames_out": byp_out}
            if self.drops:
                byp_kept, byp_drop = Signal(32), Signal(32)
                with m.If(took & s_beat.last & s_byp):
                    with m.If(swallow):
                        m.d.sync += byp_drop.eq(byp_drop + 1)
                    with m.Else():
                        m.d.sync += byp_kept.eq(byp_kept + 1)
                extra.update(bypassed=byp_kept, dropped=byp_drop)
        if short:
            engs.append(sh)
        for name in cnt_names:
            total = sum(getattr(e, name) for e in engs) + extra.get(name, 0)
            m.d.sync += getattr(self, name).eq(total[:len(getattr(self, name))])
        return m

    def _classify(self, m, cfg_layout, cfg_names, s_valid, s_ready, s_beat, s_cfg, s_byp,
                  s_short):
        """The input through a register slice, each beat with the configuration of the
        moment and the bypass test's answer (taken on a frame's first beat, held for the
        rest of it): the test's logic sits between the input and the slice, and the
        turn's ready depends on the answer only from the slice on."""
        w = self.beat_bits
        layout = data.StructLayout({"beat": beat_layout(w), "cfg": cfg_layout, "byp": 1,
                                    "short": 1})
        m.submodules.classify = cls = FifoSlice(layout)
        i = self.i
        cfg_now = Signal(cfg_layout)
        for name in cfg_names:
            m.d.comb += cfg_now[name].eq(getattr(self, name))
        first, held, byp_now = Signal(init=1), Signal(), Signal()
        m.d.comb += byp_now.eq(Mux(first, self._bypass(i.payload.data, cfg_now), held))
        if self._short is not None:
            # A one-beat frame of the short engine's shapes (the bypass lane comes first:
            # the turn reads both bits).
            m.d.comb += cls.i.payload.short.eq(first & i.payload.last
                                               & self._short[1](i.payload.data))
        with m.If(i.valid & i.ready):
            m.d.sync += [first.eq(i.payload.last), held.eq(byp_now)]
        m.d.comb += [
            cls.i.payload.beat.eq(i.payload), cls.i.payload.cfg.eq(cfg_now),
            cls.i.payload.byp.eq(byp_now), cls.i.valid.eq(i.valid), i.ready.eq(cls.i.ready),
            s_valid.eq(cls.o.valid), cls.o.ready.eq(s_ready),
            s_beat.eq(cls.o.payload.beat), s_cfg.eq(cls.o.payload.cfg),
            s_byp.eq(cls.o.payload.byp), s_short.eq(cls.o.payload.short),
        ]

    def _lane(self, m, inq, down, cfgq, eng, up, outq, cfg_names):
        """inq -> W->256 -> engine (with its frame's configuration) -> 256->W -> outq."""
        ip, dp = inq.o.payload, down.i.payload
        m.d.comb += [
            Cat(*_narrow(dp)).eq(Cat(*_narrow(ip))), dp.side.eq(0),
            down.i.valid.eq(inq.o.valid), inq.o.ready.eq(down.i.ready),
        ]
        # The engine takes a beat only with its frame's configuration at cfgq's head.
        d = down.o
        if self.until_counted:
            # The engine samples its configuration inside, behind its input slice (RX: the
            # hold, with the frame's first held beat), which may be after the frame's
            # last beat went in: the entry is popped when the engine's frames_in counts
            # the frame (RX: as the hold takes its last beat, after the sample), and the
            # next frame's first beat waits for that, so the engine never holds two
            # frames of which the later one is still to be sampled. frames_in moves by
            # one at a time and at most one frame is uncounted: parities suffice.
            seen, given, counted, lfirst = Signal(), Signal(), Signal(), Signal(init=1)
            counted_now = Signal()
            m.d.comb += counted_now.eq(eng.frames_in[0] != seen)
            m.d.sync += seen.eq(eng.frames_in[0])
            with m.If(counted_now):
                m.d.sync += counted.eq(~counted)
            allowed = cfgq.o.valid & (~lfirst | (given == counted))
            m.d.comb += cfgq.o.ready.eq(counted_now)
            with m.If(d.valid & eng.i.ready & allowed):
                m.d.sync += lfirst.eq(d.payload.last)
                with m.If(lfirst):
                    m.d.sync += given.eq(~given)
        else:
            # The engine samples its configuration with the frame's first beat at its
            # input (TX): the entry is popped with the frame's last beat.
            allowed = cfgq.o.valid
            m.d.comb += cfgq.o.ready.eq(d.valid & allowed & eng.i.ready & d.payload.last)
        m.d.comb += [
            Cat(*_narrow(eng.i.payload)).eq(Cat(*_narrow(d.payload))),
            eng.i.valid.eq(d.valid & allowed),
            d.ready.eq(eng.i.ready & allowed),
        ]
        for name in cfg_names:
            m.d.comb += getattr(eng, name).eq(cfgq.o.payload[name])
        up_p = up.i.payload
        m.d.comb += [
            Cat(*_narrow(up_p)).eq(Cat(*_narrow(eng.o.payload))), up_p.side.eq(0),
            up.i.valid.eq(eng.o.valid), eng.o.ready.eq(up.i.ready),
            Cat(*_narrow(outq.i.payload)).eq(Cat(*_narrow(up.o.payload))),
            outq.i.valid.eq(up.o.valid), up.o.ready.eq(outq.i.ready),
        ]


def wide_engine(kind, beat_bits):
    """Engine ``kind`` ("tx", "rx") at ``beat_bits``: the engine itself at 256 (the same
    design, unchanged), lanes of it above."""
    from ..rtl.blocks import engines, lanes
    if beat_bits == BEAT_BITS:
        return engines()[kind].load()()
    return {row.lanes_of: row for row in lanes().values()}[kind].load()(beat_bits)


class CompressionEngineLanes(EngineLanes):
    """The TX engine at ``beat_bits`` (512: two lanes), its lanes instances of the shared
    ``inceptionn_tx`` module."""

    def __init__(self, beat_bits=2 * BEAT_BITS):
        from ..rtl.blocks import engines
        tx = engines()["tx"]
        # One-beat frames (64 bytes and less at 512 bits) of the usual shapes go to the
        # short engine, a frame a clock (an engine lane takes one about every 9).
        short = (ShortFrameEngine, tx_short_takes) if beat_bits == SHORT_BEAT_BITS else None
        super().__init__(tx.name, tx.load(), beat_bits, drops=True, bypass=tx_sure_bypass,
                         short=short)


class DecompressionEngineLanes(EngineLanes):
    """The RX engine at ``beat_bits`` (512: two lanes), of the shared ``inceptionn_rx``."""

    def __init__(self, beat_bits=2 * BEAT_BITS):
        from ..rtl.blocks import engines
        rx = engines()["rx"]
        super().__init__(rx.name, rx.load(), beat_bits, drops=False, bypass=rx_sure_bypass,
                         until_counted=True)
