"""DecompressionUnit (paper Fig. 10): the RX decompression datapath for one payload
at a time, from the compressed byte stream to the restored 32-byte words.

Ports:
- ``start``: ``{n 12, r 2, v2 1, k 5}``: the next payload restores ``n = L div 4``
  values and ``r = L mod 4`` raw tail bytes; ``v2``: it is in wire format version 2
  (the bounded codec, decoded with ``k`` from its shim; k is not used in version 1).
- ``i``: that payload's compressed bytes (the groups, then the r tail bytes: the
  compressed payload without its 4-byte shim) as lane-aligned BurstBuffer pieces
  ``{data 256, first 5, count 6, last 1}``: bytes on lanes first .. first+count-1, the
  stream going on at lane (first + count) mod 32 of the next piece, up to a piece with
  ``last`` (see hw/burst_buffer.py).
- ``o``: ``{data 256, count 6, last 1, error 1}``: the restored payload D, 32 bytes
  (8 floats, one group) per word. ``count`` is 32 on every word but the final one,
  which has ``last`` and ``count`` = the bytes left (1..32), or 0 for n = r = 0 (one
  empty word, so every payload ends with exactly one ``last``). ``error`` (final word
  only): the groups ran out before n values and r tail bytes, or bytes were left
  over after them.

Malformed input follows the wire format's zero-extension rule (as the golden model):
past the end of the payload every byte reads as 0, so a truncated group decodes from
the bytes that are there padded with zeros, later groups read as all-zero tags (+0.0
values, 2 bytes each) and missing tail bytes are 0. The whole input payload is
consumed in every case: leftover bytes are discarded through the BurstBuffer's flush.
A short last group's missing values keep their tags' widths (the length follows the
whole tag word); their values are dropped.

Pipeline (one group per clock, all stages advance together when the output register
slice, or without it the consumer, can take a word; that ready is a flip-flop, so a
stall never reaches the BurstBuffer through logic):
  D   the step: a non-final step goes when its group is held (or the payload's last
      piece is in: then missing bytes read as zeros); the BurstBuffer's loop decides
      it and moves its read position. The final step (its group, if any, and the
      tail) goes once it is known whether bytes are left over: the last piece is in,
      or more than needed is held (``ov``, found in S3 on a clock that moved nothing;
      only malformed payloads need it); it flushes the buffer. What the unit feeds the
      loop (``allow``, ``past_ok``, ``flush``) comes from registers; a non-final step
      always takes 8 values, so the next step's plan (final, no group) is compared
      from ``left`` with constants, off the go path.
  S1  the window (rotated out of the ring by the buffer on the step's clock). The
      group's fields start at byte 2; its second half (values 4-7) at 2 + h, h =
      bytes of values 0-3 (0..16, a table of tag byte 0): split off with one byte
      select (two radix-4 stages and a 2:1 for 16). Tag byte 1's table too.
  S2  halves registered. Each half's fields split off value by value: a {0,1,2,4}
      select on the value's tag drops its field, so the next one starts at byte 0;
      the tail follows value 7. The group's length (2 + the two tables; 0 for the
      tail alone) and the bytes held minus the tail are added up here.
  S3  fields registered -> DecompressionBlocks' first half (leading-zero count). The
      length against the bytes held: a non-final group that went while not all held
      ran past the end; the final step must find exactly its group and tail.
  S4  DecompressionBlock register -> normalising shift; word assembly: one AND-OR
      per bit of a kept value and the tail (in the slot after the last value).
  S5  output word register -> AxisRegisterSlice -> ``o``.
Why the split chain: eight selects of value j's field at its own offset (0..4j+2)
are eight wide shifters; splitting the halves first and then dropping one field per
stage moves fewer bytes each time, and the tags steer the stages directly (no offsets
added up).

Between payloads the unit idles about two clocks (the next ``start`` is taken once the
final step has gone; the buffer takes the next payload's first piece the clock after
the flush and can step two clocks later); the RX engine hides them behind a frame's
header beats. Rates: see the throughput test.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .burst_buffer import BurstBuffer, PieceLayout, WINDOW_BYTES
from .primitives import AxisRegisterSlice, register, shift_down, stage_regs
from .decompression_block import DecompressionBlock
from .tag_decoder import GROUP_VALUES, tag_byte_bytes

__all__ = ["DecompressionUnit", "StartLayout", "WordLayout", "PieceLayout"]

StartLayout = data.StructLayout({"n": 12, "r": 2, "v2": 1, "k": 5})
WordLayout = data.StructLayout({"data": 256, "count": 6, "last": 1, "error": 1})

_WSTEPS = (0, 1, 2, 4)       # a field's width by its tag


def _bytes(sig, n):
    return [sig[8 * b:8 * b + 8] for b in range(n)]


class DecompressionUnit(wiring.Component):
    start: In(stream.Signature(StartLayout))
    i: In(stream.Signature(PieceLayout))
    o: Out(stream.Signature(WordLayout))

    def __init__(self, *, out_slice=True):
        self._out_slice = out_slice
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.bb = bb = BurstBuffer()
        wiring.connect(m, wiring.flipped(self.i), bb.i)
        if self._out_slice:
            m.submodules.out = oslice = AxisRegisterSlice(WordLayout)
            wiring.connect(m, oslice.o, wiring.flipped(self.o))
            ow = oslice.i
        else:
            ow = self.o            # the consumer's ready is a flip-flop

        # Every stage moves when the output (the slice, or the consumer) can take a
        # word; that ready is a flip-flop, so the stall never reaches the BurstBuffer
        # through logic.
        adv = Signal()
        m.d.comb += [adv.eq(ow.ready), bb.en.eq(adv)]

        # ---- D: decide and consume ----------------------------------------------
        running = Signal()
        left = Signal(12)          # values still to decode
        tail_r = Signal(2)
        final = Signal()           # this step ends the payload (its word is last)
        no_group = Signal()        # no values left: the step is the tail alone
        cnt = Signal(4)            # values in this step's word (0..8)
        m.d.comb += cnt.eq(Mux(left >= GROUP_VALUES, GROUP_VALUES, left))

        def plan(values, r):
            fin = (values < GROUP_VALUES) | ((values == GROUP_VALUES) & (r == 0))
            return [final.eq(fin), no_group.eq(values == 0)]

        # While idle, the plan follows the offered ``start`` (it matters only once a
        # payload runs), so a step's updates below do not share a mux with it.
        m.d.comb += self.start.ready.eq(~running)

        # The final step goes once it is known whether bytes are left over: the last
        # piece is in, or more than its group and tail are held (``ov``, found in S3 on
        # a clock that moved nothing, registered; only malformed payloads need it).
        fin_ok = Signal()
        ov = Signal()
        base = Signal()
        flush = Signal()
        m.d.comb += [
            base.eq(running & adv & bb.ready),
            bb.allow.eq(base & ~final),
            bb.past_ok.eq(base & (bb.last | (final & fin_ok))),
            flush.eq(base & final & (fin_ok | bb.last)),
            bb.flush.eq(flush),
        ]
        m.d.sync += fin_ok.eq(running & final & bb.ready & (bb.last | ov))
        go = bb.go
        # A non-final step has at least 8 values left (so it takes 8): the next plan
        # follows from ``left`` by comparisons with constants, off the go path.
        nf_final = Signal()
        nf_none = Signal()
        left8 = Signal(12)
        m.d.comb += [
            nf_final.eq((left < 2 * GROUP_VALUES) | ((left == 2 * GROUP_VALUES) & (tail_r == 0))),
            nf_none.eq(left == GROUP_VALUES),
            left8.eq(left - GROUP_VALUES),
        ]
        fmt = Signal(6)            # the payload's {v2, k}, travelling with its steps
        with m.If(~running):
            n, r = self.start.payload.n, self.start.payload.r
            m.d.sync += [running.eq(self.start.valid), left.eq(n), tail_r.eq(r), *plan(n, r),
                         fmt.eq(Cat(self.start.payload.v2, self.start.payload.k))]
        with m.Elif(go):
            m.d.sync += [left.eq(left8), final.eq(nf_final), no_group.eq(nf_none)]
        with m.If(flush):
            m.d.sync += running.eq(0)

        # ---- S1: the window; split off the second half ----------------------------
        # A step's facts travel with it, one register per stage (s1.v in S1, s2.v, ...).
        s1 = stage_regs(m, adv, 1, v=go, final=final, cnt=cnt, r=Mux(final, tail_r, 0),
                        none=no_group,
                        rest=bb.rest,          # bytes held from the step's start
                        still=~bb.moved, fmt=fmt)
        win1 = _bytes(bb.window, WINDOW_BYTES)

        # The group's length from its tag word (two table lookups and an add; 0 for the
        # tail alone), compared with the bytes held in S2, off the loop.
        h = tag_byte_bytes(m, win1[0], "h")
        h2 = tag_byte_bytes(m, win1[1], "h2")

        fld = win1[2:]             # the fields: 35 bytes from byte 2
        # h <= 16, and h = 16 only with h[3:0] = 0: two radix-4 stages on h[3:0], then
        # a 2:1 stage for 16.
        sh_lo = shift_down(m, fld, [(h[2:4], (0, 4, 8, 12)), (h[0:2], (0, 1, 2, 3))], 19, "sha")
        sh = [Signal(8, name=f"sh{b}", attrs={"keep": 1}) for b in range(19)]
        m.d.comb += [sh[b].eq(Mux(h[4], fld[16 + b], sh_lo[b])) for b in range(19)]

        # ---- S2: halves; each half's fields split off value by value ---------------
        fh2 = [register(m, adv, fld[b], f"fh2_{b}") for b in range(16)]
        sh2 = [register(m, adv, sh[b], f"sh2_{b}") for b in range(19)]
        tags2 = register(m, adv, Cat(win1[0], win1[1]), "tags2")
        t0_2 = register(m, adv, Cat(*win1[:3]), "t0_2")     # the tail when there is no group
        s2 = stage_regs(m, adv, 2, **vars(s1))
        h2_2 = register(m, adv, h2, "h2_2")
        h_2 = register(m, adv, h, "h_2")
        # S2 -> S3: the group's length (0 for the tail alone) and the bytes held past
        # the tail; compared in S3 (one adder or compare per stage, off the loop).
        glen3 = register(m, adv, Mux(s2.none, 0, h_2 + h2_2 + 2), "glen3")
        restr3 = register(m, adv, s2.rest - s2.r, "restr3")     # bytes held minus the tail
        s3 = stage_regs(m, adv, 3, rest=s2.rest, still=s2.still, fmt=s2.fmt)

        def w(tags, j):
            return tags[2 * j:2 * j + 2]

        # Each stage drops one field (a {0,1,2,4} select on its tag), so the next value's
        # field is at byte 0 of the stage's output; the tail follows value 7.
        fields = []
        for half, (src, sizes) in enumerate(((fh2, (12, 8, 4)), (sh2, (15, 11, 7, 3)))):
            cur = src
            fields.append(Cat(*cur[:4]))
            for k, size in enumerate(sizes):
                j = 4 * half + k
                cur = shift_down(m, cur, [(w(tags2, j), _WSTEPS)], size, f"f{j}_")
                if j + 1 < GROUP_VALUES:
                    fields.append(Cat(*cur[:4]))
        tail_g = Cat(*cur)

        # ---- S3: fields registered, DecompressionBlocks' first half -----------------
        fields3 = [register(m, adv, f, f"field3_{j}") for j, f in enumerate(fields)]
        tags3 = register(m, adv, tags2, "tags3")
        tail_g3 = register(m, adv, tail_g, "tail_g3")
        t0_3 = register(m, adv, t0_2, "t0_3")
        vars(s3).update(vars(stage_regs(m, adv, 3, none=s2.none, v=s2.v, final=s2.final,
                                        cnt=s2.cnt, r=s2.r)))
        # Errors of this payload so far: a non-final group that went while not all held
        # ran past the end; the final step must find exactly its group and tail held.
        err_acc = Signal()
        with m.If(adv & s3.v):
            m.d.sync += err_acc.eq(~s3.final & (err_acc | (s3.rest < glen3)))
        err3 = Signal()
        m.d.comb += err3.eq(s3.final & (err_acc | (restr3 != glen3)))
        # More than the final step's group and tail held, seen on a clock of a final
        # step that moved nothing (so it holds until that step goes).
        with m.If(adv):
            m.d.sync += ov.eq(s3.final & ~s3.v & ~s2.v & ~s1.v & s3.still & (restr3 > glen3))

        values = []
        for j in range(GROUP_VALUES):
            db = DecompressionBlock(pipelined=True)
            m.submodules[f"db{j}"] = db
            m.d.comb += [db.tag.eq(w(tags3, j)), db.bits.eq(fields3[j]), db.en.eq(adv),
                         db.v2.eq(s3.fmt[0]), db.k.eq(s3.fmt[1:6])]
            values.append(db.value)

        # ---- S4: the DecompressionBlocks' own register; assemble the word -------------
        s4 = stage_regs(m, adv, 4, v=s3.v, final=s3.final)
        err4 = register(m, adv, err3, "err4")
        tail3 = Signal(24)
        m.d.comb += tail3.eq(Mux(s3.none, t0_3, tail_g3)
                             & Cat(Mux(s3.r > 0, 0xFF, 0), Mux(s3.r > 1, 0xFF, 0),
                                   Mux(s3.r > 2, 0xFF, 0)))
        tail4 = register(m, adv, tail3, "tail4")
        keep4 = Signal(GROUP_VALUES)      # value j is in the word
        tslot4 = Signal(GROUP_VALUES)     # the tail goes in value slot j
        count4 = Signal(6)
        with m.If(adv):
            m.d.sync += [keep4[j].eq(s3.cnt > j) for j in range(GROUP_VALUES)]
            m.d.sync += [tslot4[j].eq(s3.cnt == j) for j in range(GROUP_VALUES)]
            m.d.sync += count4.eq(Mux(s3.final, Cat(s3.r, s3.cnt), 32))
        word = Signal(256)
        m.d.comb += word.eq(Cat(*((keep4[j].replicate(32) & values[j])
                                  | (tslot4[j].replicate(32) & Cat(tail4, C(0, 8)))
                                  for j in range(GROUP_VALUES))))

        # ---- S5: output register, then the slice (if any) ---------------------------
        v5 = Signal()
        with m.If(adv):
            m.d.sync += [
                v5.eq(s4.v),
                ow.payload.data.eq(word),
                ow.payload.count.eq(count4),
                ow.payload.last.eq(s4.final),
                ow.payload.error.eq(err4),
            ]
        m.d.comb += ow.valid.eq(v5)
        return m
