"""TwoGroupDecompressionUnit: a measurement of the RX decompression datapath restoring
TWO groups (16 floats, 512 bits) per clock, from the same compressed group stream as
the DecompressionUnit (groups of a 2-byte tag word + 8 fields of 0/1/2/4 bytes, 2..34
bytes each, spec section 2).

Scope (what is left out, on purpose): no payload framing. The input is one endless
group stream in full 32-byte beats; there is no ``start``/``n``/``r``, no raw tail, no
short last group, no error flag and no flush. Every output word holds two whole
groups, so a stream is restored up to its last complete pair of groups.

Ports:
- ``i``: 256-bit beats, byte j of the stream is byte j % 32 of beat j // 32.
- ``o``: 512-bit words: group 2w's 8 floats in bits [255:0], group 2w+1's in
  [511:256], value j of a group in bits [32j+31:32j].

Why a 256-bit input: two groups per clock matter only when groups are short (at
250 MHz one group a clock already restores 64 Gb/s; a second is needed only beyond
6.4x compression at 10 Gb/s, i.e. groups of 5 bytes or less: 10 bytes a clock). The
ring below turns a slot over in 4 clocks at best (write, lengths, pairs, step), so its
128 bytes, not the bus, bound the input rate (experiments/test_two_group_unit.py measures
about 24 bytes a clock with 15.5-byte groups); a 512-bit bus would need a 256-byte
ring (twice the per-position arrays below) to be used.

The loop: the second group starts at byte len1 of the first, whose tag word is only
known after decoding the first group's. It is cut by pointer jumping on a ring:
- ``mem``: a ring of 128 bytes, written a 32-byte slot at a time (a slot is written
  when all its bytes have been consumed, so writes need no shifter).
- ``tw[a]``: the stored bytes of byte a's four tags (0..16), looked up on the beat as
  it is written.
- ``ln[a] = 2 + tw[a] + tw[a+1]``: the length of a group starting at byte a
  (registered every clock).
- ``pair[a] = ln[a] + ln[a + ln[a]]``: the bytes of two groups starting at byte a
  (registered every clock: a 33-way select per position).
So ``pair[rp]``, the step of the read pointer, is one 128-way select off registers,
and the loop is read pointer -> select -> compare -> read pointer's enable (and
-> add -> read pointer). ``pair[a]`` reflects the ring as it was two clocks ago;
``held2`` counts the bytes written at least two clocks ago and not consumed, so
``held2 >= pair[rp]`` means both groups and the tags they depend on were in the ring
when ``pair[rp]`` was computed (a pair computed from bytes not yet written always reads
longer than ``held2``: a group is at least 2 bytes).

Levels: every select stage is a kept net of at most 4 data and 2 select bits (one LUT
level); without the cuts the mapper chained LUT5s, two levels per stage. The loop
selects down to two candidates (rp[5:0]), compares and adds both, then picks by rp[6]:
six levels as designed, eight as mapped (docs/rx-two-groups.md).

Pipeline after a step (``go``) at rp, every stage moving every clock (no stalls: a
step goes only with a credit for its word in the output FIFO):
  S1  rp, q = rp + ln[rp] (where the second group starts) registered.
  S2  two 34-byte windows rotated out of the ring at rp and at q (the bytes are read
      on the clock after the step; a slot write on that clock lands on the same edge,
      so the windows still see the old bytes).
  S3  two TagDecoders: field offsets registered.
  S4  16 field selects (4 bytes at the field's offset).
  S5  16 DecompressionBlocks (pipelined: leading-zero count, register, shift).
  S6  the 512-bit word registered -> output FIFO (16 words; steps minus reads never
      exceed it).
"""

from amaranth import *
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from inceptionn.hw.primitives import AxisRegisterSlice
from inceptionn.hw.primitives import pick, rotate, select_tree
from inceptionn.hw.decompression_block import DecompressionBlock
from inceptionn.hw.tag_decoder import GROUP_VALUES, MAX_GROUP_BYTES, TagDecoder, tag_byte_bytes

__all__ = ["TwoGroupDecompressionUnit", "RING_BYTES", "BEAT_BYTES", "FIFO_WORDS"]

RING_BYTES = 128
BEAT_BYTES = 32
SLOTS = RING_BYTES // BEAT_BYTES
FIFO_WORDS = 16


def _shift(m, items, amount, n_out, max_amount, name):
    """``out[i] = items[i + amount]`` (0 past the end) for i < n_out, amount <=
    max_amount, as kept radix-4 stages, LSBs first."""
    width = len(items[0])
    cur = list(items)
    lsb = 0
    while max_amount >> lsb:
        bits = amount[lsb:lsb + 2]
        rest = (max_amount >> (lsb + 2)) << (lsb + 2)   # shift still to come
        nxt = []
        for i in range(min(len(cur), n_out + rest)):
            cands = [cur[i + (k << lsb)] if i + (k << lsb) < len(cur)
                     and (k << lsb) <= max_amount else None for k in range(4)]
            nxt.append(pick(m, cands, bits, width, f"{name}{lsb}_{i}"))
        cur = nxt
        lsb += 2
    return cur[:n_out]


class TwoGroupDecompressionUnit(wiring.Component):
    i: In(stream.Signature(8 * BEAT_BYTES))
    o: Out(stream.Signature(2 * GROUP_VALUES * 32))

    def elaborate(self, platform):
        m = Module()
        N = RING_BYTES

        # ---- write side: a 32-byte slot at a time ---------------------------------
        m.submodules.islice = isl = AxisRegisterSlice(8 * BEAT_BYTES)
        wiring.connect(m, wiring.flipped(self.i), isl.i)

        mem = [Signal(8, name=f"mem{a}") for a in range(N)]
        tw = [Signal(5, name=f"tw{a}") for a in range(N)]
        wpa = Signal(8)            # bytes written, mod 256 (a multiple of 32)
        rpa = Signal(8)            # bytes consumed, mod 256
        held = Signal(8)
        room = Signal()
        we = Signal()
        m.d.comb += [
            held.eq(wpa - rpa),
            # The slot at wpa is free once every byte of it has been consumed.
            room.eq(held <= N - BEAT_BYTES),
            we.eq(isl.o.valid & room),
            isl.o.ready.eq(we),
        ]
        beat = [isl.o.payload[8 * b:8 * b + 8] for b in range(BEAT_BYTES)]
        tw_in = [tag_byte_bytes(m, beat[b], f"tw_in{b}") for b in range(BEAT_BYTES)]
        slot = wpa[5:7]
        for s in range(SLOTS):
            with m.If(we & (slot == s)):
                for b in range(BEAT_BYTES):
                    m.d.sync += [mem[BEAT_BYTES * s + b].eq(beat[b]),
                                 tw[BEAT_BYTES * s + b].eq(tw_in[b])]
        with m.If(we):
            m.d.sync += wpa.eq(wpa + BEAT_BYTES)

        # ---- group lengths and pair lengths at every position ---------------------
        # init: what an all-zero ring gives (zero tag words: 2-byte groups), so that a
        # step is never 0 bytes.
        ln = [Signal(6, name=f"ln{a}", init=2) for a in range(N)]
        m.d.sync += [ln[a].eq(tw[a] + tw[(a + 1) % N] + 2) for a in range(N)]
        pair = [Signal(7, name=f"pair{a}", init=4) for a in range(N)]
        for a in range(N):
            # The length of the group that starts ln[a] (2..34) bytes after a.
            cands = [None, None] + [ln[(a + k) % N] for k in range(2, MAX_GROUP_BYTES + 1)]
            second, = select_tree(m, cands, ln[a], f"sec{a}_")
            m.d.sync += pair[a].eq(ln[a] + second)

        # ---- the step loop ---------------------------------------------------------
        # rpa -> three select stages on rp[5:0] -> compare both halves with the bytes
        # held -> pick by rp[6] -> go (the read pointer's enable): six levels.
        rp = rpa[:7]
        p_lo, p_hi = select_tree(m, pair, rp, "psel", stop=2)
        l_lo, l_hi = select_tree(m, ln, rp, "lsel", stop=2)
        l_sel = Signal(6)
        m.d.comb += l_sel.eq(Mux(rp[6], l_hi, l_lo))
        wpa1, wpa2 = Signal(8), Signal(8)
        m.d.sync += [wpa1.eq(wpa), wpa2.eq(wpa1)]
        held2 = Signal(8)          # bytes written two or more clocks ago, not consumed
        m.d.comb += held2.eq(wpa2 - rpa)
        fit_lo, fit_hi = Signal(), Signal()
        m.d.comb += [fit_lo.eq(held2 >= p_lo), fit_hi.eq(held2 >= p_hi)]

        m.submodules.ofifo = ofifo = fifo.SyncFIFOBuffered(width=len(self.o.payload),
                                                            depth=FIFO_WORDS)
        # Credits: words stepped minus words read stays <= FIFO_WORDS, so every step's
        # word has a place in the FIFO and the pipeline never stalls. Two counters
        # rather than one up/down count keep ``go`` out of an adder.
        gone = Signal(6)
        taken = Signal(6)
        in_flight = Signal(6)
        credit = Signal()
        m.d.comb += [in_flight.eq(gone - taken), credit.eq(in_flight != FIFO_WORDS)]
        go = Signal()
        m.d.comb += go.eq(Mux(rp[6], fit_hi, fit_lo) & credit)
        rd = Signal()
        m.d.comb += rd.eq(ofifo.r_rdy & self.o.ready)
        # Both sums before the last select bit, so the add runs beside the compare.
        next_lo, next_hi = Signal(8), Signal(8)
        m.d.comb += [next_lo.eq(rpa + p_lo), next_hi.eq(rpa + p_hi)]
        with m.If(go):
            m.d.sync += [rpa.eq(Mux(rp[6], next_hi, next_lo)), gone.eq(gone + 1)]
        with m.If(rd):
            m.d.sync += taken.eq(taken + 1)

        # ---- S1: where the two groups start ----------------------------------------
        v1 = Signal()
        rp1 = Signal(7)
        q1 = Signal(7)
        m.d.sync += [v1.eq(go), rp1.eq(rp), q1.eq(rp + l_sel)]

        # ---- S2: the two windows ---------------------------------------------------
        v2 = Signal()
        win = [Signal(8 * MAX_GROUP_BYTES, name=f"win{g}") for g in range(2)]
        m.d.sync += v2.eq(v1)
        for g, at in enumerate((rp1, q1)):
            bytes_g = rotate(m, mem, at, MAX_GROUP_BYTES, f"rot{g}_",
                             stages=((6, 1), (4, 2), (2, 2), (0, 2)))
            m.d.sync += win[g].eq(Cat(*bytes_g))

        # ---- S3: tag decoders ------------------------------------------------------
        v3 = Signal()
        m.d.sync += v3.eq(v2)
        win3 = [Signal(8 * MAX_GROUP_BYTES, name=f"win3_{g}") for g in range(2)]
        off3 = [[Signal(6, name=f"off3_{g}_{j}") for j in range(GROUP_VALUES)]
                for g in range(2)]
        for g in range(2):
            td = TagDecoder()
            m.submodules[f"td{g}"] = td
            m.d.comb += td.tags.eq(win[g][:16])
            m.d.sync += win3[g].eq(win[g])
            m.d.sync += [off3[g][j].eq(td.offset[j]) for j in range(GROUP_VALUES)]

        # ---- S4: field selects -----------------------------------------------------
        v4 = Signal()
        m.d.sync += v4.eq(v3)
        tags4 = [Signal(16, name=f"tags4_{g}") for g in range(2)]
        fields4 = []
        for g in range(2):
            m.d.sync += tags4[g].eq(win3[g][:16])
            for j in range(GROUP_VALUES):
                # Value j's field lies in bytes 2 .. 4j+5, at offset 2 .. 4j+2.
                span = [win3[g][8 * b:8 * b + 8] for b in range(4 * j + 6)]
                got = _shift(m, span, off3[g][j], 4, 4 * j + 2, f"fs{g}_{j}_")
                f = Signal(32, name=f"field{g}_{j}")
                m.d.sync += f.eq(Cat(*got))
                fields4.append(f)

        # ---- S5: DecompressionBlocks (their own register inside) -------------------
        v5 = Signal()
        m.d.sync += v5.eq(v4)
        values = []
        for g in range(2):
            for j in range(GROUP_VALUES):
                db = DecompressionBlock(pipelined=True)
                m.submodules[f"db{g}_{j}"] = db
                m.d.comb += [db.tag.eq(tags4[g][2 * j:2 * j + 2]),
                             db.bits.eq(fields4[GROUP_VALUES * g + j]), db.en.eq(1)]
                values.append(db.value)

        # ---- S6: the word, then the FIFO -------------------------------------------
        v6 = Signal()
        word = Signal(len(self.o.payload))
        m.d.sync += [v6.eq(v5), word.eq(Cat(*values))]
        m.d.comb += [
            ofifo.w_data.eq(word),
            ofifo.w_en.eq(v6),
            self.o.payload.eq(ofifo.r_data),
            self.o.valid.eq(ofifo.r_rdy),
            ofifo.r_en.eq(self.o.ready),
        ]
        return m
