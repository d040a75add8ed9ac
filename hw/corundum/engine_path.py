"""One engine on one of the NIC's interface streams, with its side-band kept beside it.

    s ─► slice ─► width in ─► engine (256 bits) ─► width out ─► gate ─► slice ─► m
    └─ side-band FIFO (tid, tdest, tuser but the bad bit) ───────────┘
                         └─ drop FIFO (TX) ──────────────────────┘

At 512 bits and wider (the 100G boards) the engine is the engine's lanes at the NIC's
width (hw/engine_lanes.py: frames side by side through two 256-bit engines, merged in
order; RX's frames that the engine surely passes unchanged through its bypass lane), the
same lanes the registry builds for `make bench-hw` and the testbenches, with no width
adapter around them: the path carries a beat a clock.

The engines carry only data, keep, last and a bad-frame bit. Everything else a NIC's
stream says about a frame (Corundum's tid, tdest, the TX tag or RX timestamp in tuser)
is the frame's side-band: it is taken from the frame's first beat at the NIC's input
into a register and written to the side-band FIFO on the next clock (from registers),
so that it goes round the input slice and the width adapter; the gate puts the entry
on every output beat of that frame, from one of two registers that the FIFO fills ahead
(the frame at the output's and the next one's), so that frames leave back to back.
Frames leave an engine in the order they came in, bypassed, fallen back or compressed
alike, so the entries come in the order of the frames at the output. The TX engine drops a frame of more than MAX_FRAME_BYTES bytes: the
path counts a frame's beats into the engine and writes, a clock after its last beat,
whether it is dropped to a FIFO of one bit beside the side-band's; the gate takes an
entry with its drop bit, discards a dropped frame's entry instead of waiting for the
frame, and so has a frame's drop bit before its output (the engine is
store-and-forward, so the bit is there by then).

The input takes a frame's first beat only when the side-band FIFO has room for it on the
next clock (not full, and no write pending: a frame every two clocks at most; the
engines at 256 bits take no more, and at 512 bits only frames of one beat, 64 bytes or
less, would come faster); the input's ready comes from registers only. The
gate holds a frame's first output beat until its entry is there, and a full FIFO holds
the input; neither waits on the other, so no deadlock.
"""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..engine_instance import EngineInstance
from ..primitives import FifoSlice, StreamFifo
from ..wire import BEAT_BITS, MAX_FRAME_BYTES
from .width import nic_beat, width_adapter

__all__ = ["EnginePath", "engine_ports", "SIDE_FIFO_DEPTH"]

# Frames between the NIC's input and output: TX holds a frame about 50 clocks after its
# last beat (75-95 from its first for short frames); at 512 bits the shortest frames
# enter every 2 clocks, so 64 entries keep that rate.
SIDE_FIFO_DEPTH = 64


def engine_ports(engine_cls):
    """The engine's configuration and counter ports: {name: member}, in declaration order."""
    return {name: member for name, member in engine_cls.__annotations__.items()
            if isinstance(member, wiring.Member) and name not in ("i", "o")}


class EnginePath(wiring.Component):
    """``s``/``m``: NIC streams of ``nic_bits`` with ``side_bits`` of side-band around
    engine ``kind`` ("tx" or "rx", as the registry names them); the engine's own
    configuration inputs and counter outputs under their own names."""

    def __init__(self, kind, nic_bits, side_bits):
        from ...rtl.blocks import engines
        row = engines()[kind]
        self.kind, self._module, self._engine_cls = kind, row.name, row.load()
        self.nic_bits, self.side_bits = nic_bits, side_bits
        self.drops = kind == "tx"        # TX drops frames longer than MAX_FRAME_BYTES
        beat = nic_beat(nic_bits, side_bits)
        super().__init__({"s": In(stream.Signature(beat)), "m": Out(stream.Signature(beat)),
                          **engine_ports(self._engine_cls)})

    def elaborate(self, platform):
        m = Module()
        sb = self.side_bits
        if self.nic_bits > BEAT_BITS and self.nic_bits % BEAT_BITS == 0:
            # The registry's lanes, as `make bench-hw` and the testbenches build them
            # (RX with its bypass lane, each lane keeping its frame's configuration until
            # its engine has counted the frame).
            from ..engine_lanes import wide_engine
            eng = wide_engine(self.kind, self.nic_bits)
            eng_bits = self.nic_bits
        else:
            eng, eng_bits = EngineInstance(self._module, self._engine_cls), BEAT_BITS
        m.submodules.engine = eng
        max_beats = MAX_FRAME_BYTES // (eng_bits // 8)     # longer frames: dropped (TX)
        for name, member in engine_ports(self._engine_cls).items():
            if member.flow == In:
                m.d.comb += getattr(eng, name).eq(getattr(self, name))
            else:
                m.d.comb += getattr(self, name).eq(getattr(eng, name))

        # The beats without their side-band, through the input slice and adapter.
        # The slices as small FIFOs: entries in distributed RAM, not a mux per bit of a
        # beat (up to 700 bits at 512) as a skid register would take; one clock more.
        m.submodules.in_slice = in_slice = FifoSlice(nic_beat(self.nic_bits, 0))
        m.submodules.out_slice = out_slice = FifoSlice(nic_beat(self.nic_bits, sb))
        wiring.connect(m, out_slice.o, wiring.flipped(self.m))

        # The side-band, from the NIC's input to the gate.
        m.submodules.side_fifo = fifo = StreamFifo(max(sb, 1), SIDE_FIFO_DEPTH)
        first = Signal(init=1)              # the next input beat starts a frame
        pend = Signal()                     # the side-band register is written next clock
        side_q = Signal(max(sb, 1))
        s = self.s
        room = ~first | (~pend & fifo.i.ready)
        sp, ip = s.payload, in_slice.i.payload
        m.d.comb += [
            ip.data.eq(sp.data), ip.keep.eq(sp.keep), ip.last.eq(sp.last),
            ip.user.eq(sp.user),
            in_slice.i.valid.eq(s.valid & room),
            s.ready.eq(in_slice.i.ready & room),
            fifo.i.payload.eq(side_q), fifo.i.valid.eq(pend),
        ]
        took = s.valid & s.ready
        m.d.sync += pend.eq(took & first)
        with m.If(took):
            m.d.sync += first.eq(sp.last)
            with m.If(first):
                m.d.sync += side_q.eq(sp.side)

        # Into the engine, at its width.
        up = width_adapter(self.nic_bits, eng_bits, 0)
        if up is None:
            wide_in = in_slice.o
        else:
            m.submodules.width_in = up
            wiring.connect(m, in_slice.o, up.i)
            wide_in = up.o
        p = wide_in.payload
        if self.drops:
            # Written a clock after the frame's last beat went in, from registers, so that
            # the engine's input ready (its own FIFO's level) does not reach this FIFO's
            # level in the same clock. Never full when written, so the engine's input
            # does not wait on it: a frame's drop entry is written after its side-band
            # entry (the side-band register, the slice, this register) and the two heads
            # are popped together, so it holds fewer entries than the side-band FIFO, at
            # most SIDE_FIFO_DEPTH; twice that depth leaves room for the buffered FIFO's
            # own way of counting (its output register apart).
            m.submodules.drop_fifo = dfifo = StreamFifo(1, 2 * SIDE_FIFO_DEPTH)
            beats = Signal(range(max_beats + 2))   # beats of this frame so far, saturating
            m.d.sync += [dfifo.i.payload.eq(beats >= max_beats),
                         dfifo.i.valid.eq(wide_in.valid & eng.i.ready & p.last)]
            with m.If(wide_in.valid & wide_in.ready):
                with m.If(p.last):
                    m.d.sync += beats.eq(0)
                with m.Elif(beats <= max_beats):
                    m.d.sync += beats.eq(beats + 1)
        m.d.comb += [
            eng.i.payload.data.eq(p.data), eng.i.payload.keep.eq(p.keep),
            eng.i.payload.last.eq(p.last), eng.i.payload.user.eq(p.user),
            eng.i.valid.eq(wide_in.valid), wide_in.ready.eq(eng.i.ready),
        ]

        # Out of the engine, back to the NIC's width.
        wide_out = stream.Signature(nic_beat(eng_bits, 0)).create()
        m.d.comb += [
            wide_out.payload.data.eq(eng.o.payload.data),
            wide_out.payload.keep.eq(eng.o.payload.keep),
            wide_out.payload.last.eq(eng.o.payload.last),
            wide_out.payload.user.eq(eng.o.payload.user),
            wide_out.valid.eq(eng.o.valid),
            eng.o.ready.eq(wide_out.ready),
        ]
        down = width_adapter(eng_bits, self.nic_bits, 0)
        if down is None:
            narrow = wide_out
        else:
            m.submodules.width_out = down
            wiring.connect(m, wide_out, down.i)
            narrow = down.o

        # The gate: each output beat takes the side-band of its frame's entry. Two
        # registers (banks) in front of the FIFOs hold the entry of the frame at the
        # output (bank `sel`) and the next one, so that the next frame's first beat can
        # follow a frame's last on the next clock (popping the FIFO's head only after
        # the last beat, as a register, cost a clock a frame: 24 beats in 25 clocks at
        # 1514 bytes at 512 bits). The banks are filled from the FIFOs by registers only
        # (an empty bank pops the heads), so the output's ready does not reach the
        # FIFOs' level counters (the 6-level budget); the output flips `sel` and empties
        # its bank. TX: an entry is taken with its drop bit, and a dropped frame's entry
        # is emptied without waiting for a frame.
        sw = max(sb, 1)
        side = [Signal(sw, name=f"side{i}") for i in range(2)]
        full = [Signal(name=f"full{i}") for i in range(2)]
        drop = [Signal(name=f"drop{i}") for i in range(2)]
        sel = Signal()
        head_side = Mux(sel, side[1], side[0])
        head_full = Mux(sel, full[1], full[0])
        head_drop = Mux(sel, drop[1], drop[0])
        # The bank an entry goes to: the head's if it is empty (then both are), else
        # the other.
        target = Mux(head_full, ~sel, sel)
        room = ~full[0] | ~full[1]
        if self.drops:
            take = room & fifo.o.valid & dfifo.o.valid
            m.d.comb += dfifo.o.ready.eq(take)
        else:
            take = room & fifo.o.valid
        m.d.comb += fifo.o.ready.eq(take)
        head_ok = head_full & ~head_drop
        o = out_slice.i
        m.d.comb += [
            o.payload.data.eq(narrow.payload.data), o.payload.keep.eq(narrow.payload.keep),
            o.payload.last.eq(narrow.payload.last), o.payload.user.eq(narrow.payload.user),
            o.payload.side.eq(head_side),
            o.valid.eq(narrow.valid & head_ok),
            narrow.ready.eq(o.ready & head_ok),
        ]
        done = (narrow.valid & o.ready & head_ok & narrow.payload.last) | (head_full & head_drop)
        for i in range(2):
            with m.If(take & (target == i)):
                m.d.sync += [full[i].eq(1), side[i].eq(fifo.o.payload),
                             drop[i].eq(dfifo.o.payload if self.drops else 0)]
            with m.Elif(done & (sel == i)):
                m.d.sync += full[i].eq(0)
        with m.If(done):
            m.d.sync += sel.eq(~sel)
        return m
