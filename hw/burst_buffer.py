"""BurstBuffer (paper Fig. 10): 66 bytes (528 bits) of a compressed byte stream,
shown as a window at the read position.

A compressed group (2..34 bytes) can straddle two 256-bit bursts, so the buffer keeps
about two bursts and shifts away what the consumer used, as the paper's decompressor
does. The window is the buffer register itself (byte 0 = next unconsumed byte), so the
consumer's tag decode starts straight from flip-flops.

Why 66 bytes and not the paper's 512 bits: pieces are absorbed whole, and a consumer
may be waiting for 34 bytes (a group of four raw values, or a final step that must
see one byte past its end) while 34 are held; one more 32-byte burst must still fit,
else the buffer waits for the consumer and the consumer for the buffer. 34 + 32 = 66.

Ports:
- ``i``: pieces ``{data 256, first 5, count 6, last 1}``: ``count`` (0..32) valid bytes
  starting at byte ``first`` of ``data`` (first + count <= 32); ``last`` marks the final
  piece of a payload. A piece is absorbed whole once it fits next to what remains
  after this clock's ``consume``. Pieces are pre-aligned into a register slice first,
  so ``i.ready`` comes straight from a flip-flop.
- ``window`` (34 bytes), ``avail`` (bytes valid in the window, 0..34; bytes past
  ``avail`` within the buffer read as 0 once nothing more is buffered), ``level``
  (bytes buffered, 0..66), ``drained`` (the payload's last piece has been absorbed and
  ``avail`` is all that remains of it).
- ``consume`` (0..34, must be <= ``avail``): bytes dropped from the front this clock.
- ``flush``: the consumer is done with this payload. What is buffered is discarded
  (``consume`` is ignored that clock) and, if the last piece has not arrived yet, the
  pieces up to and including it are dropped as they come. The next payload's pieces
  are absorbed from then on. After a payload's last piece, nothing more is absorbed
  until ``flush``, so payloads never mix. Flush a payload once some of it is visible
  (``avail`` > 0) or it is drained, as the DecompressionUnit does: a flush while the
  buffer is still dropping the previous payload's rest has no effect.

Invariant: bytes at and above ``level`` are zero. A consumer that reads past the end
of a drained payload therefore sees zeros, which is what the wire format's
zero-extension rule for truncated payloads asks for.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .axis import AxisRegisterSlice

__all__ = ["BurstBuffer", "PieceLayout", "WINDOW_BYTES", "BUFFER_BYTES"]

PieceLayout = data.StructLayout({"data": 256, "first": 5, "count": 6, "last": 1})

WINDOW_BYTES = 34
BUFFER_BYTES = WINDOW_BYTES + 32

# A piece after alignment: its bytes start at byte 0, bytes past count are zero.
_AlignedLayout = data.StructLayout({"data": 256, "count": 6, "last": 1})


class BurstBuffer(wiring.Component):
    i: In(stream.Signature(PieceLayout))
    window: Out(8 * WINDOW_BYTES)
    avail: Out(6)
    level: Out(7)
    drained: Out(1)
    consume: In(6)
    flush: In(1)

    def elaborate(self, platform):
        m = Module()

        # Input stage: align the piece to byte 0 and zero its unused bytes, then
        # register it (full skid slice: 1 piece per clock, registered ready).
        m.submodules.slice = sl = AxisRegisterSlice(_AlignedLayout)
        shifted_in = Signal(256)
        m.d.comb += shifted_in.eq(self.i.payload.data >> Cat(C(0, 3), self.i.payload.first))
        keep_in = Cat(*(Mux(self.i.payload.count > b, 0xFF, 0x00) for b in range(32)))
        m.d.comb += [
            sl.i.payload.data.eq(shifted_in & keep_in),
            sl.i.payload.count.eq(self.i.payload.count),
            sl.i.payload.last.eq(self.i.payload.last),
            sl.i.valid.eq(self.i.valid),
            self.i.ready.eq(sl.i.ready),
        ]
        piece = sl.o.payload

        buf = Signal(8 * BUFFER_BYTES)
        level = Signal(7)
        got_last = Signal()     # this payload's last piece is in the buffer
        discard = Signal()      # flushed before its last piece: drop pieces up to it

        m.d.comb += [
            self.window.eq(buf[:8 * WINDOW_BYTES]),
            self.avail.eq(Mux(level > WINDOW_BYTES, WINDOW_BYTES, level)),
            self.level.eq(level),
            self.drained.eq(got_last & (level <= WINDOW_BYTES)),
        ]

        remain = Signal(7)      # bytes left after this clock's consume
        m.d.comb += remain.eq(level - self.consume)
        fits = Signal()
        m.d.comb += fits.eq(remain + piece.count <= BUFFER_BYTES)
        take = Signal()         # absorb the piece into the buffer
        drop = Signal()         # swallow a piece of a flushed payload
        m.d.comb += [
            take.eq(sl.o.valid & ~got_last & ~discard & ~self.flush & fits),
            drop.eq(sl.o.valid & discard),
            sl.o.ready.eq(take | drop),
        ]

        kept = Signal(8 * BUFFER_BYTES)
        placed = Signal(8 * BUFFER_BYTES)
        m.d.comb += [
            kept.eq(buf >> Cat(C(0, 3), self.consume)),
            placed.eq(piece.data << Cat(C(0, 3), remain)),
        ]

        with m.If(self.flush):
            m.d.sync += [buf.eq(0), level.eq(0), got_last.eq(0)]
            # The rest of the payload is still on its way: drop it when it comes.
            m.d.sync += discard.eq(~got_last & ~discard | discard & ~(drop & piece.last))
        with m.Else():
            with m.If(take):
                m.d.sync += [
                    buf.eq(kept | placed),
                    level.eq(remain + piece.count),
                    got_last.eq(piece.last),
                ]
            with m.Else():
                m.d.sync += [buf.eq(kept), level.eq(remain)]
            with m.If(drop & piece.last):
                m.d.sync += discard.eq(0)
        return m
