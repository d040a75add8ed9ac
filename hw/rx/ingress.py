"""RX ingress: each input beat's byte count and VLAN test, ahead of the input slice."""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..axis import axis_signature
from ..primitives import keep_count
from .layouts import InBeat

__all__ = ["Ingress"]


class Ingress(wiring.Component):
    """Adds to each beat its valid-byte count ``kc`` (tkeep is a contiguous low mask,
    spec section 4: its popcount read off as XORs) and ``vlan`` (bytes 12-13 are
    0x8100), computed before the input register slice so that the feed's paths do not
    count tkeep bits. Combinational: ``i.ready`` is ``o.ready``."""

    i: In(axis_signature())
    o: Out(stream.Signature(InBeat))

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [
            self.o.payload.data.eq(self.i.payload.data),
            self.o.payload.keep.eq(self.i.payload.keep),
            self.o.payload.last.eq(self.i.payload.last),
            self.o.payload.user.eq(self.i.payload.user),
            self.o.payload.kc.eq(keep_count(self.i.payload.keep)),
            self.o.payload.vlan.eq(self.i.payload.data[12 * 8:14 * 8] == 0x0081),
            self.o.valid.eq(self.i.valid),
            self.i.ready.eq(self.o.ready),
        ]
        return m
