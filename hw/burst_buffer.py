"""BurstBuffer (paper Fig. 10): up to 95 bytes (about three 256-bit bursts) of a
compressed byte stream, shown as a window at the read position.

A compressed group (2..34 bytes) can straddle two 256-bit bursts, so the buffer keeps
several bursts and shifts away what the consumer used each clock, as the paper's
decompressor does. The window is the buffer register itself (byte 0 = next
unconsumed byte), so the consumer's decisions start straight from flip-flops.

Ports:
- ``i``: pieces ``{data 256, first 5, count 6, last 1}``: ``count`` (0..32) valid bytes
  starting at byte ``first`` of ``data`` (first + count <= 32); ``last`` marks the final
  piece of a payload. Pieces are aligned to byte 0 and registered (``i.ready`` comes
  from a flip-flop), then absorbed whole while at most 63 bytes are held.
- ``window`` (34 bytes), ``avail`` (bytes valid in the window, 0..34), ``level`` (bytes
  held, 0..95), ``drained`` (the payload's last piece has been absorbed and ``avail`` is
  all that remains of it). Bytes at and above ``level`` read as 0.
- ``tag_bytes``: the stored-field bytes that the tags in window bytes 0 and 1 announce
  (0..32), so a group's length is ``2 + tag_bytes`` without decoding it here: each
  byte carries its four tags' width sum from the input stage on.
- ``consume`` (0..34) and ``go``: drop ``consume`` bytes from the front this clock
  when ``go`` is high. Dropping more than ``level`` empties the buffer (a consumer
  reading past the end of a drained payload sees zeros, as the wire format's
  zero-extension rule asks).
- ``flush``: the consumer is done with this payload. What is held is discarded and, if
  the last piece has not been absorbed yet, the pieces up to and including it are
  dropped as they come. After a payload's last piece nothing more is absorbed until
  ``flush``, so payloads never mix. Flush a payload once some of it is visible or it
  is drained (as the DecompressionUnit does): a flush while the buffer is still
  dropping the previous payload's rest has no effect.

Why 95 bytes and not the paper's 512 bits: pieces are absorbed whole and the decision
to absorb uses only flip-flops (held <= 63), never this clock's ``consume``, which
keeps the absorb logic off the consumer's critical loop. A consumer may wait for 34
bytes with 33 held (or for one byte past a 34-byte final step), so absorbing must
still be possible then; and a consumer taking up to 32 bytes a clock from a stream of
full beats must never starve. With "held <= 63" both hold, and that takes 63 + 32 =
95 bytes. (With 64 bytes, a 34-byte group after 33 held bytes would wait forever.)

Timing: the new piece is placed at ``level`` (from flip-flops, in parallel with the
consumer's decision), OR-ed onto the held bytes and the result shifted by
``consume``. The consumer's loop (window -> size -> consume -> 35-way byte shift ->
window) is the deepest path of the RX datapath; everything else around it is
registered.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .axis import AxisRegisterSlice
from .tag_decoder import TAG_BYTES_WIDTH, tag_byte_prefix

__all__ = ["BurstBuffer", "PieceLayout", "WINDOW_BYTES", "BUFFER_BYTES", "shift_items"]

PieceLayout = data.StructLayout({"data": 256, "first": 5, "count": 6, "last": 1})

WINDOW_BYTES = 34
BUFFER_BYTES = 95
ROOM_LEVEL = 63        # a piece is absorbed while at most this many bytes are held

# A piece after alignment: bytes from 0, bytes past count zero, plus each byte's
# tag width sum.
_AlignedLayout = data.StructLayout({"data": 256, "psum": 32 * TAG_BYTES_WIDTH,
                                    "count": 6, "last": 1})


def shift_items(m, items, amount, n_out, *, up=False, max_amount=None, name="sh"):
    """``out[i] = items[i + amount]`` (``items[i - amount]`` if ``up``), 0 outside,
    for i < n_out, as radix-4 mux stages (4 data + 2 select inputs each), computing
    only the outputs and candidates that ``max_amount`` can reach."""
    width = len(items[0])
    zero = C(0, width)
    max_amount = (1 << len(amount)) - 1 if max_amount is None else max_amount
    cur = list(items)
    step = 1
    for lsb in range(0, len(amount), 2):
        sel = amount[lsb:lsb + 2]
        # Shifts still to come after this stage.
        rest = max_amount >> (lsb + len(sel)) << (lsb + len(sel))
        n_keep = n_out + (0 if up else rest)
        nxt = []
        for i in range(n_keep):
            cands = []
            for k in range(1 << len(sel)):
                src = i - k * step if up else i + k * step
                ok = 0 <= src < len(cur) and k * step <= max_amount
                cands.append(cur[src] if ok else zero)
            s = Signal(width, name=f"{name}{lsb}_{i}")
            if len(sel) == 2:
                m.d.comb += s.eq(Mux(sel[1], Mux(sel[0], cands[3], cands[2]),
                                     Mux(sel[0], cands[1], cands[0])))
            else:
                m.d.comb += s.eq(Mux(sel[0], cands[1], cands[0]))
            nxt.append(s)
        cur = nxt
        step <<= len(sel)
    return cur[:n_out]


class BurstBuffer(wiring.Component):
    i: In(stream.Signature(PieceLayout))
    window: Out(8 * WINDOW_BYTES)
    tag_bytes: Out(6)
    avail: Out(6)
    level: Out(7)
    drained: Out(1)
    consume: In(6)
    go: In(1)
    flush: In(1)

    def elaborate(self, platform):
        m = Module()

        # Input stage: look up each byte's tag width sum, align bytes and sums to
        # byte 0 (radix-4 stages on ``first``), zero what lies past ``count``, then
        # register (full skid slice: one piece per clock, registered ready).
        m.submodules.slice = sl = AxisRegisterSlice(_AlignedLayout)
        raw_items = []
        for b in range(32):
            byte = self.i.payload.data[8 * b:8 * b + 8]
            raw_items.append(Cat(byte, tag_byte_prefix(m, byte, 4, f"ps_in{b}")))
        in_items = shift_items(m, raw_items, self.i.payload.first, 32, name="al")
        kept = [Mux(self.i.payload.count > b, it, 0) for b, it in enumerate(in_items)]
        m.d.comb += [
            sl.i.payload.data.eq(Cat(*(it[:8] for it in kept))),
            sl.i.payload.psum.eq(Cat(*(it[8:] for it in kept))),
            sl.i.payload.count.eq(self.i.payload.count),
            sl.i.payload.last.eq(self.i.payload.last),
            sl.i.valid.eq(self.i.valid),
            self.i.ready.eq(sl.i.ready),
        ]
        piece = sl.o.payload

        item = 8 + TAG_BYTES_WIDTH      # a byte and its tag width sum travel together
        buf = [Signal(item, name=f"buf{b}") for b in range(BUFFER_BYTES)]
        level = Signal(7)
        got_last = Signal()     # this payload's last piece is in the buffer
        discard = Signal()      # flushed before its last piece: drop pieces up to it

        m.d.comb += [
            self.window.eq(Cat(*(b[:8] for b in buf[:WINDOW_BYTES]))),
            self.tag_bytes.eq(buf[0][8:] + buf[1][8:]),
            self.avail.eq(Mux(level > WINDOW_BYTES, WINDOW_BYTES, level)),
            self.level.eq(level),
            self.drained.eq(got_last & (level <= WINDOW_BYTES)),
        ]

        # Absorb from flip-flops only (never from this clock's consume).
        take = Signal()
        drop = Signal()
        m.d.comb += [
            take.eq(sl.o.valid & ~got_last & ~discard & (level <= ROOM_LEVEL)),
            drop.eq(sl.o.valid & discard),
            sl.o.ready.eq(take | drop),
        ]
        piece_items = [Cat(piece.data[8 * b:8 * b + 8],
                           piece.psum[TAG_BYTES_WIDTH * b:TAG_BYTES_WIDTH * (b + 1)])
                       for b in range(32)]
        placed = shift_items(m, piece_items, level[:6], BUFFER_BYTES, up=True,
                             max_amount=ROOM_LEVEL, name="pl")
        # Held bytes are zero at and above level, placed ones below it: OR merges.
        cat = [Signal(item, name=f"cat{b}") for b in range(BUFFER_BYTES)]
        for b in range(BUFFER_BYTES):
            m.d.comb += cat[b].eq(buf[b] | Mux(take, placed[b], 0))
        shifted = shift_items(m, cat, self.consume, BUFFER_BYTES,
                              max_amount=WINDOW_BYTES, name="sh")
        for b in range(BUFFER_BYTES):
            with m.If(self.flush):
                m.d.sync += buf[b].eq(0)
            with m.Elif(self.go):
                m.d.sync += buf[b].eq(shifted[b])
            with m.Else():
                m.d.sync += buf[b].eq(cat[b])

        grown = Signal(7)
        m.d.comb += grown.eq(level + Mux(take, piece.count, 0))
        with m.If(self.flush):
            m.d.sync += [level.eq(0), got_last.eq(0)]
            # The rest of the payload is still on its way: drop it when it comes.
            with m.If(discard):
                m.d.sync += discard.eq(~(drop & piece.last))
            with m.Else():
                m.d.sync += discard.eq(~got_last & ~(take & piece.last))
        with m.Else():
            with m.If(self.go):
                m.d.sync += level.eq(Mux(grown >= self.consume, grown - self.consume, 0))
            with m.Else():
                m.d.sync += level.eq(grown)
            with m.If(take & piece.last):
                m.d.sync += got_last.eq(1)
            with m.If(drop & piece.last):
                m.d.sync += discard.eq(0)
        return m
