"""DecompressionUnit (paper Fig. 10): the RX decompression datapath for one payload
at a time, from the compressed byte stream to the restored 32-byte words.

Ports:
- ``start``: ``{n 12, r 2}``: the next payload restores ``n = L div 4`` values and
  ``r = L mod 4`` raw tail bytes.
- ``i``: that payload's compressed bytes as BurstBuffer pieces ``{data 256, first 5,
  count 6, last 1}``: the groups, then the r tail bytes (the compressed payload
  without its 4-byte shim), up to a piece with ``last``.
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
slice can take a word, so a stall never reaches the BurstBuffer through logic):
  D   from flip-flops: the BurstBuffer keeps the length of the group at its byte 0 in
      a register (and whether all of it is held); a non-final step goes when the
      group is held (or the payload's last piece is in: then missing bytes read as
      zeros) and the buffer drops it at once. The final step (its group, if any, and
      the tail) is decided from the previous clock's state, registered, so it stays
      off the step loop; it goes once it is known whether bytes are left over (the
      last piece is in, or more than needed is buffered), and flushes the buffer.
      A non-final step always takes 8 values, so the next step's plan (final, no
      group) is compared from ``left`` with constants, off the go path.
      The TagDecoder's field offsets are registered with the window.
  S1  per-value 4-byte field select at its offset, tail select after the group.
  S2  fields registered -> DecompressionBlock leading-zero count; which value slots
      are kept and which slot takes the tail are decoded here.
  S3  DecompressionBlock register -> normalising shift; word assembly: one AND-OR
      per bit of a kept value and the tail (in the slot after the last value).
  S4  output word register -> AxisRegisterSlice -> ``o``.
Between payloads the unit idles about two clocks (the next ``start`` is taken once
the final step has gone; the buffer takes the next payload's first piece the clock
after the flush). The final step goes without waiting for the registered decision
when the payload's last piece is already in (the usual case), and the buffer knows
the first group's length the clock after its first piece lands.

Rates (measured by sim/test_decompression_unit.py, output always ready): see the
throughput test; one word per clock while groups average up to 32 bytes.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .axis import AxisRegisterSlice
from .burst_buffer import BurstBuffer, PieceLayout, WINDOW_BYTES
from .decompression_block import DecompressionBlock
from .tag_decoder import GROUP_VALUES, TagDecoder

__all__ = ["DecompressionUnit", "StartLayout", "WordLayout", "PieceLayout"]

StartLayout = data.StructLayout({"n": 12, "r": 2})
WordLayout = data.StructLayout({"data": 256, "count": 6, "last": 1, "error": 1})


class DecompressionUnit(wiring.Component):
    start: In(stream.Signature(StartLayout))
    i: In(stream.Signature(PieceLayout))
    o: Out(stream.Signature(WordLayout))

    def elaborate(self, platform):
        m = Module()
        m.submodules.bb = bb = BurstBuffer()
        m.submodules.td = td = TagDecoder()
        m.submodules.out = oslice = AxisRegisterSlice(WordLayout)
        wiring.connect(m, wiring.flipped(self.i), bb.i)
        wiring.connect(m, oslice.o, wiring.flipped(self.o))

        # Every stage moves when the output slice can take a word; its ready is a
        # flip-flop, so the stall never reaches the BurstBuffer through logic.
        adv = Signal()
        m.d.comb += adv.eq(oslice.i.ready)

        # ---- D: decide and consume ----------------------------------------------
        running = Signal()
        left = Signal(12)          # values still to decode
        tail_r = Signal(2)
        err = Signal()             # a step ran past the end of the payload
        # Registered facts about the coming step, so the consume loop (window ->
        # need -> consume -> window) holds no comparisons on ``left``:
        final = Signal()           # this step ends the payload (its word is last)
        no_group = Signal()        # no values left: the step is the tail alone
        cnt = Signal(4)            # values in this step's word (0..8)
        m.d.comb += cnt.eq(Mux(left >= GROUP_VALUES, GROUP_VALUES, left))

        def plan(values, r):
            # (final, no_group) for a step with ``values`` still to decode.
            fin = (values < GROUP_VALUES) | ((values == GROUP_VALUES) & (r == 0))
            none = values == 0
            return [final.eq(fin), no_group.eq(none)]

        m.d.comb += self.start.ready.eq(~running)
        with m.If(self.start.valid & ~running):
            n, r = self.start.payload.n, self.start.payload.r
            m.d.sync += [running.eq(1), left.eq(n), tail_r.eq(r), err.eq(0), *plan(n, r)]

        m.d.comb += td.tags.eq(bb.window[:16])
        glen = Signal(6)           # bytes of this step's group (0 when none)
        m.d.comb += glen.eq(Mux(no_group, 0, bb.length))
        need = Signal(7)           # bytes of the final step: group and tail
        m.d.comb += need.eq(glen + tail_r)
        # The final step goes once it is known whether bytes are left over: decided
        # from the previous clock's state (registered, off the step loop); a step that
        # goes changes the state, so the decision is redone after it.
        fin_ok = Signal()
        # A non-final step goes when its group is in the buffer (or never will be).
        go = Signal()
        flush = Signal()           # go & final, as its own gate (fin_ok is a register)
        base = Signal()
        m.d.comb += [
            base.eq(running & adv & bb.ready),
            # With the last piece in, what is left over is known now (no wait).
            go.eq(base & Mux(final, fin_ok | bb.last, bb.fits | bb.last)),
            flush.eq(base & final & (fin_ok | bb.last)),
        ]
        m.d.sync += fin_ok.eq(running & ~go & final & bb.known & (bb.last | (bb.level > need)))
        # The final step reads past the end of the payload or leaves bytes over.
        final_bad = Signal()
        m.d.comb += final_bad.eq(bb.level != need)
        # Past the end of a payload whose last piece is in, the buffer reads as zeros.
        m.d.comb += [
            bb.go.eq(go),
            bb.flush.eq(flush),
        ]
        # A non-final step has at least 8 values left (so it takes 8): the next plan
        # follows from ``left`` by comparisons with constants, off the go path.
        nf_final = Signal()
        nf_none = Signal()
        m.d.comb += [
            nf_final.eq((left < 2 * GROUP_VALUES) | ((left == 2 * GROUP_VALUES) & (tail_r == 0))),
            nf_none.eq(left == GROUP_VALUES),
        ]
        with m.If(go):
            m.d.sync += [left.eq(left - GROUP_VALUES), final.eq(nf_final), no_group.eq(nf_none)]
            with m.If(~final & ~bb.fits):
                m.d.sync += err.eq(1)
            with m.If(final):
                m.d.sync += running.eq(0)

        # ---- S1: select the fields and the tail ---------------------------------
        v1 = Signal()
        win1 = Signal(8 * WINDOW_BYTES)
        # Field offsets from the group start (tag word included): 2..2+4j.
        off1 = [Signal(6, name=f"off1_{j}") for j in range(GROUP_VALUES)]
        tags1 = Signal(16)
        glen1 = Signal(6)
        cnt1 = Signal(4)
        r1 = Signal(2)
        final1 = Signal()
        err1 = Signal()
        with m.If(adv):
            m.d.sync += [
                v1.eq(go),
                win1.eq(bb.window),
                tags1.eq(Mux(no_group, 0, bb.window[:16])),
                glen1.eq(glen),
                cnt1.eq(cnt),
                r1.eq(Mux(final, tail_r, 0)),
                final1.eq(final),
                err1.eq(final & (err | final_bad)),
            ]
            m.d.sync += [off1[j].eq(td.offset[j]) for j in range(GROUP_VALUES)]

        fields = []
        for j in range(GROUP_VALUES):
            span = win1[:8 * (4 * j + 6)]    # value j's field lies within these bytes
            # Bytes past the field's width belong to the next field; the
            # DecompressionBlock ignores them (tag 01 reads 8 bits, 10 reads 16).
            f = Signal(32, name=f"field{j}")
            m.d.comb += f.eq(span >> Cat(C(0, 3), off1[j]))
            fields.append(f)
        tail_raw = Signal(24)
        tail1 = Signal(24)
        m.d.comb += [
            tail_raw.eq(win1 >> Cat(C(0, 3), glen1)),
            tail1.eq(tail_raw & Cat(Mux(r1 > 0, 0xFF, 0), Mux(r1 > 1, 0xFF, 0),
                                    Mux(r1 > 2, 0xFF, 0))),
        ]

        # ---- S2: fields registered, DecompressionBlocks -------------------------
        v2, final2, err2 = Signal(), Signal(), Signal()
        cnt2 = Signal(4)
        r2 = Signal(2)
        tail2 = Signal(24)
        tags2 = Signal(16)
        keep2 = Signal(GROUP_VALUES)      # value j is in the word
        tslot2 = Signal(GROUP_VALUES)     # the tail goes in value slot j
        fields2 = [Signal(32, name=f"field2_{j}") for j in range(GROUP_VALUES)]
        with m.If(adv):
            m.d.sync += [v2.eq(v1), final2.eq(final1), err2.eq(err1), cnt2.eq(cnt1),
                         r2.eq(r1), tail2.eq(tail1), tags2.eq(tags1)]
            m.d.sync += [fields2[j].eq(fields[j]) for j in range(GROUP_VALUES)]
            m.d.sync += [keep2[j].eq(cnt1 > j) for j in range(GROUP_VALUES)]
            m.d.sync += [tslot2[j].eq(cnt1 == j) for j in range(GROUP_VALUES)]

        values = []
        for j in range(GROUP_VALUES):
            db = DecompressionBlock(pipelined=True)
            m.submodules[f"db{j}"] = db
            m.d.comb += [db.tag.eq(tags2[2 * j:2 * j + 2]), db.bits.eq(fields2[j]),
                         db.en.eq(adv)]
            values.append(db.value)

        # ---- S3: the DecompressionBlocks' own register; assemble the word -------
        v3, final3, err3 = Signal(), Signal(), Signal()
        cnt3 = Signal(4)
        r3 = Signal(2)
        tail3 = Signal(24)
        keep3 = Signal(GROUP_VALUES)
        tslot3 = Signal(GROUP_VALUES)
        count3 = Signal(6)
        with m.If(adv):
            m.d.sync += [v3.eq(v2), final3.eq(final2), err3.eq(err2), cnt3.eq(cnt2),
                         r3.eq(r2), tail3.eq(tail2), keep3.eq(keep2), tslot3.eq(tslot2),
                         count3.eq(Mux(final2, Cat(r2, cnt2), 32))]
        # Value j or the tail (in the slot after the last value), one AND-OR per bit.
        word = Signal(256)
        m.d.comb += word.eq(Cat(*((keep3[j].replicate(32) & values[j])
                                  | (tslot3[j].replicate(32) & Cat(tail3, C(0, 8)))
                                  for j in range(GROUP_VALUES))))

        # ---- S4: output register, then the slice --------------------------------
        v4 = Signal()
        with m.If(adv):
            m.d.sync += [
                v4.eq(v3),
                oslice.i.payload.data.eq(word),
                oslice.i.payload.count.eq(count3),
                oslice.i.payload.last.eq(final3),
                oslice.i.payload.error.eq(err3),
            ]
        m.d.comb += oslice.i.valid.eq(v4)
        return m
