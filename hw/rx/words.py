"""RX words: the DecompressionUnit's words as beats for the Realigner."""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..axis import axis_signature
from ..decompression_unit import WordLayout
from ..wire import BEAT_BYTES

__all__ = ["Words"]


class Words(wiring.Component):
    """A unit word of ``count`` bytes becomes a beat with the low ``count`` keep bits
    set; the unit's ``error`` rides on the beat's ``user`` bit (it is set on the last
    word). Combinational: ``i.ready`` is ``o.ready`` (the Realigner's input slice, a
    register)."""

    i: In(stream.Signature(WordLayout))
    o: Out(axis_signature())

    def elaborate(self, platform):
        m = Module()
        word_keep = Signal(BEAT_BYTES)
        for k in range(BEAT_BYTES):
            m.d.comb += word_keep[k].eq(self.i.payload.count > k)
        m.d.comb += [
            self.o.payload.data.eq(self.i.payload.data),
            self.o.payload.keep.eq(word_keep),
            self.o.payload.last.eq(self.i.payload.last),
            self.o.payload.user.eq(self.i.payload.error),
            self.o.valid.eq(self.i.valid),
            self.i.ready.eq(self.o.ready),
        ]
        return m
