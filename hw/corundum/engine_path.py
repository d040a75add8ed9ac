"""One engine on one of the NIC's interface streams, with its side-band kept beside it.

    s ─► slice ─► width in ─► engine (256 bits) ─► width out ─► gate ─► slice ─► m
                      └─ side-band FIFO (tid, tdest, tuser but the bad bit; drop) ─┘

The engines carry only data, keep, last and a bad-frame bit. Everything else a NIC's
stream says about a frame (Corundum's tid, tdest, the TX tag or RX timestamp in tuser)
rides in ``side``: it is taken from the frame's first beat at the engine's input and
written to the side-band FIFO, then put on every output beat of that frame. Frames
leave an engine in the order they came in, bypassed, fallen back or compressed alike,
so the FIFO's head always belongs to the frame at the output. The TX engine drops a
frame of more than MAX_FRAME_BEATS beats; the path counts the beats and marks such a
frame's entry, and the gate discards that entry instead of waiting for the frame.

When an entry is written (``entry_at_last``): the TX engine is store-and-forward (a
frame leaves after its last beat is in), so its entry is written with the last beat,
when the length, hence the drop, is known. The RX engine is cut-through: a frame may
start leaving before its last beat is in, so its entry is written with the first beat
(RX drops nothing). The gate holds a frame's first output beat until its entry is
there, and a full FIFO holds the input; neither waits on the other, so no deadlock.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..engine_instance import EngineInstance
from ..primitives import AxisRegisterSlice, StreamFifo
from ..wire import BEAT_BITS, MAX_FRAME_BEATS
from .width import nic_beat, width_adapter

__all__ = ["EnginePath", "engine_ports", "SIDE_FIFO_DEPTH"]

# Frames between the engine's input and the NIC output: TX holds a frame about 50
# clocks after its last beat (75-95 from its first for short frames); at 512 bits the
# shortest frames enter every 2 clocks, so 64 entries keep that rate.
SIDE_FIFO_DEPTH = 64


def engine_ports(engine_cls):
    """The engine's configuration and counter ports: {name: member}, in declaration order."""
    return {name: member for name, member in engine_cls.__annotations__.items()
            if isinstance(member, wiring.Member) and name not in ("i", "o")}


class EnginePath(wiring.Component):
    """``s``/``m``: NIC streams of ``nic_bits`` with ``side_bits`` of side-band; the
    engine's own configuration inputs and counter outputs under their own names."""

    def __init__(self, module, engine_cls, nic_bits, side_bits, *, entry_at_last):
        self._module, self._engine_cls = module, engine_cls
        self.nic_bits, self.side_bits = nic_bits, side_bits
        self.entry_at_last = entry_at_last
        beat = nic_beat(nic_bits, side_bits)
        super().__init__({"s": In(stream.Signature(beat)), "m": Out(stream.Signature(beat)),
                          **engine_ports(engine_cls)})

    def elaborate(self, platform):
        m = Module()
        sb = self.side_bits
        m.submodules.engine = eng = EngineInstance(self._module, self._engine_cls)
        for name, member in engine_ports(self._engine_cls).items():
            if member.flow == In:
                m.d.comb += getattr(eng, name).eq(getattr(self, name))
            else:
                m.d.comb += getattr(self, name).eq(getattr(eng, name))

        m.submodules.in_slice = in_slice = AxisRegisterSlice(nic_beat(self.nic_bits, sb))
        m.submodules.out_slice = out_slice = AxisRegisterSlice(nic_beat(self.nic_bits, sb))
        wiring.connect(m, wiring.flipped(self.s), in_slice.i)
        wiring.connect(m, out_slice.o, wiring.flipped(self.m))

        # Into the engine, at 256 bits.
        up = width_adapter(self.nic_bits, BEAT_BITS, sb)
        if up is None:
            wide_in = in_slice.o
        else:
            m.submodules.width_in = up
            wiring.connect(m, in_slice.o, up.i)
            wide_in = up.o

        entry = data.StructLayout({"side": max(sb, 1), "drop": 1})
        m.submodules.side_fifo = fifo = StreamFifo(entry, SIDE_FIFO_DEPTH)
        first = Signal(init=1)              # the next beat into the engine starts a frame
        side_q = Signal(max(sb, 1))
        beats = Signal(range(MAX_FRAME_BEATS + 2))   # beats of this frame so far, saturating
        p = wide_in.payload
        writes = p.last if self.entry_at_last else first
        go = ~writes | fifo.i.ready
        m.d.comb += [
            eng.i.payload.data.eq(p.data), eng.i.payload.keep.eq(p.keep),
            eng.i.payload.last.eq(p.last), eng.i.payload.user.eq(p.user),
            eng.i.valid.eq(wide_in.valid & go),
            wide_in.ready.eq(eng.i.ready & go),
            fifo.i.payload.side.eq(Mux(first, p.side, side_q)),
            fifo.i.payload.drop.eq(beats >= MAX_FRAME_BEATS if self.entry_at_last else 0),
            fifo.i.valid.eq(wide_in.valid & eng.i.ready & writes),
        ]
        with m.If(wide_in.valid & wide_in.ready):
            m.d.sync += first.eq(p.last)
            with m.If(first):
                m.d.sync += side_q.eq(p.side)
            with m.If(p.last):
                m.d.sync += beats.eq(0)
            with m.Elif(beats <= MAX_FRAME_BEATS):
                m.d.sync += beats.eq(beats + 1)

        # Out of the engine, back to the NIC's width.
        wide_out = stream.Signature(nic_beat(BEAT_BITS, sb)).create()
        m.d.comb += [
            wide_out.payload.data.eq(eng.o.payload.data),
            wide_out.payload.keep.eq(eng.o.payload.keep),
            wide_out.payload.last.eq(eng.o.payload.last),
            wide_out.payload.user.eq(eng.o.payload.user),
            wide_out.valid.eq(eng.o.valid),
            eng.o.ready.eq(wide_out.ready),
        ]
        down = width_adapter(BEAT_BITS, self.nic_bits, sb)
        if down is None:
            narrow = wide_out
        else:
            m.submodules.width_out = down
            wiring.connect(m, wide_out, down.i)
            narrow = down.o

        # The gate: each output beat takes the side-band of the FIFO's head; an entry of
        # a dropped frame is discarded as soon as it is the head. The head of a frame
        # whose last beat went out is popped one clock later (``done``, a register), so
        # that the adapter's lane logic does not reach the FIFO's level counter in the
        # same clock (the 6-level budget); the gate holds during that clock.
        head = fifo.o.payload
        done = Signal()
        head_ok = fifo.o.valid & ~head.drop & ~done
        o = out_slice.i
        m.d.comb += [
            o.payload.data.eq(narrow.payload.data), o.payload.keep.eq(narrow.payload.keep),
            o.payload.last.eq(narrow.payload.last), o.payload.user.eq(narrow.payload.user),
            o.payload.side.eq(head.side),
            o.valid.eq(narrow.valid & head_ok),
            narrow.ready.eq(o.ready & head_ok),
            fifo.o.ready.eq(done | (fifo.o.valid & head.drop)),
        ]
        m.d.sync += done.eq(narrow.valid & o.ready & head_ok & narrow.payload.last)
        return m
