"""TX comp writer: the AlignmentUnit's beats into the comp ring."""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..axis import axis_signature
from ..wire import MAX_FRAME_BEATS
from .layouts import comp_region, store_write

__all__ = ["CompWriter"]


class CompWriter(wiring.Component):
    """Writes the compressed payload's beats (``i``, already on the output frame's byte
    lanes) into the comp ring (``store``) and, per frame, its ring region to ``region``.
    A frame's region is capped at MAX_FRAME_BEATS beats (a larger result is never sent:
    it cannot be smaller than the payload).

    Contract: ``i.ready`` needs ``region.ready`` (its FIFO's room) and a free ring entry;
    ``region.valid`` is the write strobe of a frame's last beat, so it is only high with
    ``region.ready``."""

    def __init__(self, aw):
        self.aw = aw
        super().__init__({
            "i": In(axis_signature()),
            "store": Out(store_write(aw)),
            "region": Out(stream.Signature(comp_region(aw))),
        })

    def elaborate(self, platform):
        m = Module()
        comp, au_o = self.store, self.i
        cw_n = Signal(range(MAX_FRAME_BEATS + 2))
        cw_start = Signal(self.aw + 1)
        cw_store = Signal(init=1)       # cw_n < MAX_FRAME_BEATS, as a flag (ready path)
        m.d.comb += [
            au_o.ready.eq(self.region.ready & (comp.w_room | ~cw_store)),
            comp.w_en.eq(au_o.valid & au_o.ready & cw_store),
            comp.w_data.eq(au_o.payload.data),
        ]
        cw_fire = Signal()
        m.d.comb += cw_fire.eq(au_o.valid & au_o.ready)
        with m.If(cw_fire):
            with m.If(au_o.payload.last):
                m.d.sync += [cw_n.eq(0), cw_store.eq(1), cw_start.eq(comp.wp + cw_store)]
            with m.Elif(cw_store):
                m.d.sync += [cw_n.eq(cw_n + 1), cw_store.eq(cw_n + 1 < MAX_FRAME_BEATS)]
        m.d.comb += [
            self.region.valid.eq(cw_fire & au_o.payload.last),
            self.region.payload.eq(Cat(cw_start, (comp.wp + cw_store)[:self.aw + 1])),
        ]
        return m
