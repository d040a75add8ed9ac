"""TX group former: realigned payload beats -> CompressionUnit groups."""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..axis import axis_signature
from ..compression_unit import GroupIn
from ..primitives import keep_count
from ..wire import BEAT_BITS
from .layouts import CodecK, CuCodec, TailInfo

__all__ = ["GroupFormer"]


class GroupFormer(wiring.Component):
    """Turns the realigned payload beats (``i``) into CompressionUnit groups (``o``: 8
    values and a count per group, ``cu_k``: the frame's k and codec, from ``k``, held with each
    group since the CompressionUnit samples it per group) and, per frame, its r = L mod 4
    tail bytes to ``tail``. One beat is held back so that a final beat with only tail
    bytes (< 4) marks the previous group as the last; that tail then follows as a
    vector of its own (``tail.sep``), else it rides in the last group.

    ``o.valid`` waits for the frame's ``k`` entry and, on a last group, for ``tail``
    room; ``k`` is popped and ``tail`` written when the last group is taken (``valid``
    of ``tail`` is that write strobe).
    """

    i: In(axis_signature())
    k: In(stream.Signature(CodecK))
    o: Out(stream.Signature(GroupIn))
    cu_k: Out(CuCodec)
    tail: Out(stream.Signature(TailInfo))

    def __init__(self):
        super().__init__()
        # The held beat and its last flag: driven only when elaborated for formal checks
        # (platform "formal"), where "holds work" is seen.
        self.formal_held = Signal()
        self.formal_last = Signal()

    def elaborate(self, platform):
        m = Module()
        B = BEAT_BITS
        gi = self.i
        g_valid = Signal()
        g_data = Signal(B)
        g_nb = Signal(6)
        g_last = Signal()
        rl_nb = Signal(6)
        m.d.comb += rl_nb.eq(keep_count(gi.payload.keep))
        absorb = Signal()
        # keep is a contiguous low mask: fewer than 4 bytes <=> lane 3 is empty.
        m.d.comb += absorb.eq(~g_last & gi.valid & gi.payload.last & ~gi.payload.keep[3])
        grp_last = Signal()
        m.d.comb += grp_last.eq(g_last | absorb)
        g_out = Signal()
        m.d.comb += g_out.eq(g_valid & (g_last | gi.valid) & self.k.valid &
                             (~grp_last | self.tail.ready))
        g_fire = Signal()
        m.d.comb += g_fire.eq(g_out & self.o.ready)
        count = Signal(4)
        tail_w = Signal(TailInfo)
        m.d.comb += count.eq(Mux(g_last, Mux(g_nb < 4, 1, g_nb[2:6]), 8))
        m.d.comb += [
            self.o.valid.eq(g_out),
            self.o.payload.values.eq(g_data),
            self.o.payload.count.eq(count),
            self.o.payload.last.eq(grp_last),
            # A held last beat's tail sits in value slot `count` (count < 8 when r > 0).
            self.o.payload.tail.eq(Mux(g_last, g_nb[:2], 0)),
            # k travels with each group: the CompressionUnit samples it per group.
            self.cu_k.k.eq(self.k.payload.k), self.cu_k.v2.eq(self.k.payload.v2),
            self.k.ready.eq(g_fire & grp_last),
            self.tail.valid.eq(g_fire & grp_last),
            # Only a separate tail (an absorbed beat) needs its bytes here: a held last
            # beat's tail rides in its group.
            tail_w.tail.eq(gi.payload.data[:24]),
            tail_w.r.eq(Mux(absorb, rl_nb[:2], g_nb[:2])),
            tail_w.sep.eq(absorb & (rl_nb[:2] != 0)),
            self.tail.payload.eq(tail_w),
            gi.ready.eq(~g_valid | g_fire),
        ]
        with m.If(g_fire & absorb):
            m.d.sync += g_valid.eq(0)
        with m.Elif(gi.ready):
            m.d.sync += [g_valid.eq(gi.valid), g_data.eq(gi.payload.data), g_nb.eq(rl_nb),
                         g_last.eq(gi.payload.last)]
        if platform == "formal":
            m.d.comb += [self.formal_held.eq(g_valid), self.formal_last.eq(g_last)]
        return m
