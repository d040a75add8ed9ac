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
next length at byte 0". Here the length is a register (``tb`` = length - 2; the
fixed 2 of the tag word is wiring). The step shifts by ``tb`` in three radix-4
stages; the tag width sums of the two bytes that land at 0 and 1 are looked up on the
shift's candidates before its last stage, so only that stage and one adder follow
the lookup. The radix-4 stages are AND-OR over a decoded select: nested 2:1 muxes
share their halves between neighbouring outputs and then map to two LUT levels per
stage (and more LUTs). A new piece is placed with its own shifter at ``u``, the
position its first byte has *after* this clock's step (level - length when a step
may go, the level otherwise), computed from registers only, and merged with the
shifted bytes in the final LUT. Placement at level - length is only right when the
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
from .tag_decoder import tag_byte_prefix

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
        lvl2 = Signal(signed(8), init=-2)    # level - 2 (so that level >= length is lvl2 >= tb)
        tb = Signal(6)              # length - 2 of the group at byte 0
        lv = Signal()               # tb is valid
        got_last = Signal()         # this payload's last piece is in the buffer
        discard = Signal()          # flushed before its last piece: drop pieces up to it

        runl = Signal()             # a step may go this clock: not a hold clock, lv; registered
        m.d.comb += [
            self.window.eq(Cat(*buf[:WINDOW_BYTES])),
            self.tag_bytes.eq(tb),
            self.length.eq(tb + 2),
            self.ready.eq(runl),
            self.known.eq(lv),
            self.fits.eq(lvl2 >= tb),
            self.level.eq(lvl2 + 2),
            self.last.eq(got_last),
        ]
        go = Signal()
        m.d.comb += go.eq(self.go & runl)

        # Where a piece taken this clock lands, from registers only: after the step
        # when one may go (it is taken only if the step goes), else at the level.
        u = Signal(signed(8))
        m.d.comb += u.eq(lvl2 - Mux(runl, tb, -2))
        pv = Signal()               # a piece of this payload is waiting
        fit = Signal()              # ... and it fits at u
        drop = Signal()
        take = Signal()
        m.d.comb += [
            pv.eq(sl.o.valid & ~got_last & ~discard),
            # u < 0 only when a step reads past the end: the last piece is in then.
            fit.eq(pv & (u <= ROOM)),
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
        for b in range(N):
            nxt = Signal(8, name=f"nxt{b}")
            with m.If(self.flush):
                m.d.comb += nxt.eq(0)
            with m.Elif(go):
                m.d.comb += nxt.eq(shd[b] | Mux(fit, placed[b], 0))
            with m.Else():
                m.d.comb += nxt.eq(buf[b] | Mux(take, placed[b], 0))
            m.d.sync += buf[b].eq(nxt)

        # Next group length: the tag width sums of the two bytes that will be at 0 and
        # 1, looked up on the data shift's candidates before its last stage, so that
        # only that stage and one adder follow the lookup.
        def tsum(byte, name):
            return tag_byte_prefix(m, byte, 4, name)

        tw = []
        for k in range(2):
            c = [tsum(at(k + 16 * j), f"tc{k}_{j}") for j in range(3)]
            here = tsum(buf[k], f"th{k}")
            t = Signal(5, name=f"tn{k}")
            m.d.comb += t.eq(Mux(go, Mux(tb[5], c[2], Mux(tb[4], c[1], c[0])), here))
            tw.append(t)
        tb_next = Signal(6)
        m.d.comb += tb_next.eq(tw[0] + tw[1])

        # Level after this clock: lvl2' = u - 2 + count when a piece is taken (u >= 0
        # then), max(u, 0) - 2 after a step, unchanged otherwise.
        cnt_m2 = Signal(signed(8))
        m.d.comb += cnt_m2.eq(piece.count - 2)
        lvl_take = Signal(signed(8))
        lvl_step = Signal(signed(8))
        m.d.comb += [
            lvl_take.eq(u + cnt_m2),
            lvl_step.eq(Mux(u[7], -2, u - 2)),
        ]
        lv_n = Signal()
        hold_n = Signal()
        m.d.comb += [
            # The next length is right when both of its tag bytes were held (or the
            # payload has ended: then missing bytes are zeros for good).
            lv_n.eq(~self.flush & (got_last | Mux(go, u >= 2, lvl2 >= 0))),
            # A valid length that did not go blocks placement; give it a hold clock
            # when a piece is waiting that would fit at the level.
            hold_n.eq(~self.flush & runl & ~go & pv & (lvl2 <= ROOM - 2)),
        ]
        m.d.sync += [lv.eq(lv_n), runl.eq(lv_n & ~hold_n)]
        with m.If(self.flush):
            m.d.sync += [lvl2.eq(-2), got_last.eq(0)]
            # The rest of the payload is still on its way: drop it when it comes.
            with m.If(discard):
                m.d.sync += discard.eq(~(drop & piece.last))
            with m.Else():
                m.d.sync += discard.eq(~got_last & ~(take & piece.last))
        with m.Else():
            with m.If(take):
                m.d.sync += lvl2.eq(lvl_take)
            with m.Elif(go):
                m.d.sync += lvl2.eq(lvl_step)
            m.d.sync += tb.eq(tb_next)
            with m.If(take & piece.last):
                m.d.sync += got_last.eq(1)
            with m.If(drop & piece.last):
                m.d.sync += discard.eq(0)
        return m
