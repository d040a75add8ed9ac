"""BurstBuffer (paper Fig. 10): up to 72 bytes of a compressed byte stream, held in a
shift register whose byte 0 is the next unconsumed byte, with the length of the
group that starts there kept in a register.

Ports:
- ``i``: pieces ``{data 256, first 5, count 6, last 1}``: ``count`` (0..32) valid bytes
  starting at byte ``first`` of ``data`` (first + count <= 32); ``last`` marks the final
  piece of a payload. Pieces are aligned to byte 0 and registered (``i.ready`` comes
  from a flip-flop).
- ``window`` (37 bytes: the longest group and a 3-byte tail), ``level`` (bytes held,
  0..72), ``last`` (the payload's last piece is in: nothing more will come, and bytes
  at and above ``level`` read as 0 for good).
- ``length`` (2..34): the length of the group at byte 0 (tag word + fields),
  ``tag_bytes`` = length - 2, ``fits`` (the whole group is held: level >= length).
  They are valid while ``known`` is high; ``ready``: known and a step may go this
  clock (it is low on a hold clock, see below).
- ``go``: drop ``length`` bytes from the front this clock (ignored unless ``ready``). Going
  past ``level`` empties the buffer (a consumer reading past the end of a payload whose
  ``last`` is in sees zeros, as the wire format's zero-extension rule asks).
- ``flush``: the consumer is done with this payload. What is held is discarded and, if
  the last piece has not been absorbed yet, the pieces up to and including it are
  dropped as they come. After a payload's last piece nothing more is absorbed until
  ``flush``, so payloads never mix. Flush a payload once some of it is visible or its
  last piece is in (as the DecompressionUnit does): a flush while the buffer is still
  dropping the previous payload's rest has no effect.

Why this shape (timing): the consumer's loop is "length at byte 0 -> shift by it ->
next length at byte 0". Here the length is a register, twice (``tb`` = length - 2
steers the shift, the fixed 2 of the tag word being wiring; ``length`` itself feeds
the consumer and the level arithmetic, so neither needs an adder). The step shifts
by ``tb`` in three radix-4 stages; the next length is computed in full (three
6-input tables, carry-save, one adder: ``tag_decoder.group_length``) on each of the
last stage's three candidates for bytes 0 and 1 and on bytes 0 and 1 as they are
(no step; below 2 bytes held, the bytes the waiting piece brings, so a payload's
first length is known the clock after its first piece lands), and one 4-way select
picks the result. The radix-4 stages are AND-OR over a decoded select: nested 2:1 muxes
share their halves between neighbouring outputs and then map to two LUT levels per
stage (and more LUTs). A new piece is placed with its own shifter at ``u``, the
position its first byte has *after* this clock's step (level - length when a step
may go, the level otherwise), computed from registers only, and merged with the
shifted bytes in the final LUT (an AND-OR of shifted, held and placed bytes with
flat enables). ``level - 41`` is kept in a register beside the level, so "the piece
fits at u" is the sign of one subtraction, as is ``fits``. Placement at level - length is only right when the
step goes, so a piece waits while a valid length does not go, and the clock after
such a stall is a "hold" clock: no step, the piece is placed at the level.

Why 72 bytes: a piece is absorbed while ``u <= 40``, so it always fits; a consumer may
wait for 38 bytes (a 34-byte group, a 3-byte tail and one byte to see that more
follow), and with ``u <= 40`` a piece is still absorbed then. Going at 32 bytes a
clock from full beats never starves either: a piece is skipped only when more than
40 bytes remain after the step, which covers the next group.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .axis import AxisRegisterSlice
from .tag_decoder import group_length

__all__ = ["BurstBuffer", "PieceLayout", "WINDOW_BYTES", "BUFFER_BYTES", "shift_items"]

PieceLayout = data.StructLayout({"data": 256, "first": 5, "count": 6, "last": 1})

WINDOW_BYTES = 37
BUFFER_BYTES = 72
ROOM = BUFFER_BYTES - 32     # a piece is placed at positions u .. u + 31, u <= ROOM
MAX_TAG_BYTES = 32           # a group's fields: 0..32 bytes

# A piece after alignment: bytes from 0, bytes past count zero.
_AlignedLayout = data.StructLayout({"data": 256, "count": 6, "last": 1})


def shift_items(m, items, amount, n_out, *, up=False, max_amount=None, name="sh"):
    """``out[i] = items[i + amount]`` (``items[i - amount]`` if ``up``), 0 outside,
    for i < n_out, as radix-4 mux stages (4 data + 2 select inputs each), computing
    only the outputs and candidates that ``max_amount`` can reach. ``amount`` may be a
    list of Signals, one per stage (2 select bits each, LSBs first)."""
    width = len(items[0])
    zero = C(0, width)
    sels = amount if isinstance(amount, list) else \
        [amount[lsb:lsb + 2] for lsb in range(0, len(amount), 2)]
    nbits = sum(len(s) for s in sels)
    max_amount = (1 << nbits) - 1 if max_amount is None else max_amount
    cur = list(items)
    step = 1
    lsb = 0
    for sel in sels:
        # Shifts still to come after this stage.
        rest = max_amount >> (lsb + len(sel)) << (lsb + len(sel))
        n_keep = n_out + (0 if up else rest)
        nxt = []
        dec = [sel == k for k in range(4)] if len(sel) == 2 else None
        for i in range(n_keep):
            cands = []
            for k in range(1 << len(sel)):
                src = i - k * step if up else i + k * step
                ok = 0 <= src < len(cur) and k * step <= max_amount
                cands.append(cur[src] if ok else zero)
            s = Signal(width, name=f"{name}{lsb}_{i}")
            if len(sel) == 2:
                # AND-OR over a decoded select: nested 2:1 muxes would share their
                # halves between neighbouring outputs and map to two LUT levels.
                m.d.comb += s.eq(
                    (dec[0].replicate(width) & cands[0]) | (dec[1].replicate(width) & cands[1])
                    | (dec[2].replicate(width) & cands[2]) | (dec[3].replicate(width) & cands[3]))
            else:
                m.d.comb += s.eq(Mux(sel[0], cands[1], cands[0]))
            nxt.append(s)
        cur = nxt
        step <<= len(sel)
        lsb += len(sel)
    return cur[:n_out]


class BurstBuffer(wiring.Component):
    i: In(stream.Signature(PieceLayout))
    window: Out(8 * WINDOW_BYTES)
    length: Out(6)
    tag_bytes: Out(6)
    ready: Out(1)
    known: Out(1)
    fits: Out(1)
    level: Out(7)
    last: Out(1)
    go: In(1)
    flush: In(1)

    def elaborate(self, platform):
        m = Module()
        N = BUFFER_BYTES

        # Input stage: align bytes to byte 0 (radix-4 stages on ``first``), zero what
        # lies past ``count``, then register (full skid slice, registered ready).
        m.submodules.slice = sl = AxisRegisterSlice(_AlignedLayout)
        raw = [self.i.payload.data[8 * b:8 * b + 8] for b in range(32)]
        aligned = shift_items(m, raw, self.i.payload.first, 32, name="al")
        kept = [Mux(self.i.payload.count > b, it, 0) for b, it in enumerate(aligned)]
        m.d.comb += [
            sl.i.payload.data.eq(Cat(*kept)),
            sl.i.payload.count.eq(self.i.payload.count),
            sl.i.payload.last.eq(self.i.payload.last),
            sl.i.valid.eq(self.i.valid),
            self.i.ready.eq(sl.i.ready),
        ]
        piece = sl.o.payload

        buf = [Signal(8, name=f"buf{b}") for b in range(N)]
        lvl = Signal(signed(8))     # bytes held
        lvl41 = Signal(signed(8), init=-(ROOM + 1))   # lvl - 41: its sign is "lvl <= ROOM"
        tb = Signal(6)              # length - 2 of the group at byte 0 (the shift amount)
        glen = Signal(6, init=2)    # the same length, kept in its own register
        lv = Signal()               # tb is valid
        got_last = Signal()         # this payload's last piece is in the buffer
        discard = Signal()          # flushed before its last piece: drop pieces up to it

        runl = Signal()             # a step may go this clock: not a hold clock, lv; registered
        fits = Signal()
        m.d.comb += [
            self.window.eq(Cat(*buf[:WINDOW_BYTES])),
            self.tag_bytes.eq(tb),
            self.length.eq(glen),
            self.ready.eq(runl),
            self.known.eq(lv),
            self.fits.eq(fits),
            self.level.eq(lvl),
            self.last.eq(got_last),
        ]
        go = Signal()
        m.d.comb += go.eq(self.go & runl)
        # "Whole group held" as the sign of one subtraction (a compare maps deeper).
        after = Signal(signed(8))
        m.d.comb += [after.eq(lvl - glen), fits.eq(~after[7])]

        # Where a piece taken this clock lands, from registers only: after the step
        # when one may go (it is taken only if the step goes), else at the level.
        # u41 = u - 41 is computed beside it so that "fits at u" is a sign bit.
        sub = Signal(6)
        u = Signal(signed(8))
        u41 = Signal(signed(8))
        m.d.comb += [
            sub.eq(Mux(runl, glen, 0)),
            u.eq(lvl - sub),
            u41.eq(lvl41 - sub),
        ]
        pv = Signal()               # a piece of this payload is waiting
        fit = Signal()              # ... and it fits at u
        drop = Signal()
        take = Signal()
        m.d.comb += [
            pv.eq(sl.o.valid & ~got_last & ~discard),
            # u < 0 only when a step reads past the end: the last piece is in then.
            fit.eq(pv & u41[7]),
            drop.eq(sl.o.valid & discard),
            take.eq(fit & (~runl | go)),
            sl.o.ready.eq(take | drop),
        ]
        pitems = [piece.data[8 * b:8 * b + 8] for b in range(32)]
        placed = shift_items(m, pitems, u[:6], N, up=True, max_amount=ROOM, name="pl")

        # The step: shift by length = 2 + tb, as two radix-4 stages on tb[3:0] and a
        # last 3-way stage on tb[5:4] (0, 16 or 32 more).
        s12 = shift_items(m, buf[2:], [tb[0:2], tb[2:4]], N + MAX_TAG_BYTES,
                          max_amount=15, name="sh")
        z8 = C(0, 8)

        def at(i):
            return s12[i] if i < len(s12) else z8

        shd = []
        for b in range(N):
            s = Signal(8, name=f"shd{b}")
            m.d.comb += s.eq(Mux(tb[5], at(b + 32), Mux(tb[4], at(b + 16), at(b))))
            shd.append(s)
        # Next state as one AND-OR over three sources with flat enables (one LUT).
        keep_shd = Signal()
        keep_buf = Signal()
        put = Signal()
        m.d.comb += [
            keep_shd.eq(go & ~self.flush),
            keep_buf.eq(~go & ~self.flush),
            put.eq(take & ~self.flush),
        ]
        for b in range(N):
            nxt = Signal(8, name=f"nxt{b}")
            m.d.comb += nxt.eq((keep_shd.replicate(8) & shd[b]) | (keep_buf.replicate(8) & buf[b])
                               | (put.replicate(8) & placed[b]))
            m.d.sync += buf[b].eq(nxt)

        # Next group length: computed on the data shift's candidates before its last
        # stage (the two bytes that land at 0 and 1 for each of its three choices) and
        # on bytes 0 and 1 when no step goes; the last stage's choice (or "no step")
        # then picks one of four finished lengths.
        def lengths(b0, b1, name):
            return (group_length(m, b0, b1, f"{name}t"), group_length(m, b0, b1, f"{name}l", bias=2))

        cands = [lengths(at(16 * j), at(1 + 16 * j), f"gc{j}") for j in range(3)]
        # No step: bytes 0 and 1 as they will be after this clock. Below 2 bytes held
        # no step can go and a waiting piece is always taken (at the level), so its
        # first bytes are known from registers: the length of a payload's first group
        # is then ready the clock after its first piece lands, not two.
        lvl0 = Signal()
        lvl1 = Signal()
        m.d.comb += [lvl0.eq(pv & (lvl == 0)), lvl1.eq(pv & (lvl == 1))]
        h0 = Signal(8)
        h1 = Signal(8)
        m.d.comb += [
            h0.eq(Mux(lvl0, pitems[0], buf[0])),
            h1.eq(Mux(lvl0, pitems[1], Mux(lvl1, pitems[0], buf[1]))),
        ]
        cands.append(lengths(h0, h1, "gh"))
        pick = Signal(2)
        m.d.comb += pick.eq(Cat(tb[4] | ~go, tb[5] | ~go))
        dec = [pick == k for k in range(4)]
        tb_next = Signal(6)
        len_next = Signal(6)
        for out, idx in ((tb_next, 0), (len_next, 1)):
            terms = [dec[k].replicate(6) & cands[k][idx] for k in range(4)]
            m.d.comb += out.eq(terms[0] | terms[1] | terms[2] | terms[3])

        # Level after this clock: u + count when a piece is taken (u >= 0 then),
        # max(u, 0) after a step, unchanged otherwise; lvl41 alongside.
        u_pos = Signal()
        m.d.comb += u_pos.eq(~u[7])
        two_in = Signal()           # the piece taken below 2 bytes brings byte 1
        m.d.comb += two_in.eq((lvl0 & (piece.count >= 2)) | (lvl1 & (piece.count >= 1)))
        lv_n = Signal()
        hold_n = Signal()
        u_ge2 = Signal()
        m.d.comb += [
            u_ge2.eq(u_pos & (u[1:7] != 0)),
            # The next length is right when both of its tag bytes were held (or the
            # payload has ended: then missing bytes are zeros for good).
            lv_n.eq(~self.flush & (got_last | Mux(go, u_ge2, (lvl[1:7] != 0) | two_in))),
            # A valid length that did not go blocks placement; give it a hold clock
            # when a piece is waiting that would fit at the level.
            hold_n.eq(~self.flush & runl & ~go & pv & lvl41[7]),
        ]
        m.d.sync += [lv.eq(lv_n), runl.eq(lv_n & ~hold_n)]
        with m.If(self.flush):
            m.d.sync += [lvl.eq(0), lvl41.eq(-(ROOM + 1)), got_last.eq(0)]
            # The rest of the payload is still on its way: drop it when it comes.
            with m.If(discard):
                m.d.sync += discard.eq(~(drop & piece.last))
            with m.Else():
                m.d.sync += discard.eq(~got_last & ~(take & piece.last))
        with m.Else():
            with m.If(take):
                m.d.sync += [lvl.eq(u + piece.count), lvl41.eq(u41 + piece.count)]
            with m.Elif(go):
                m.d.sync += [lvl.eq(Mux(u_pos, u, 0)), lvl41.eq(Mux(u_pos, u41, -(ROOM + 1)))]
            m.d.sync += [tb.eq(tb_next), glen.eq(len_next)]
            with m.If(take & piece.last):
                m.d.sync += got_last.eq(1)
            with m.If(drop & piece.last):
                m.d.sync += discard.eq(0)
        return m
