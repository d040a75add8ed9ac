"""CompressionUnit (paper Fig. 9): one group of 8 float32 values per clock -> tag word +
packed fields.

Pipeline, 5 clocks from an accepted group to its output:
  1. input register (values, valid-value mask from ``count``, last, k);
  2. eight CompressionBlocks -> register (tags, fields, widths, and the values); each
     field is cleared above its width by the register's synchronous resets, and its
     width kept as the tag's 2-bit code, the form the ShifterTree's first level takes
     at one LUT per bit;
  3-5. ShifterTree, one register per tree level; the output length is added from the
     tree's length (the tag word, and r - 4 for a tail's slot) behind its last register.
The whole pipeline advances together (``en = ~o.valid | o.ready``): a low ``o.ready``
freezes every stage, so nothing is lost or duplicated, and a group is accepted every
clock while the output is taken. ``i.ready`` is that same ``en``, so it follows
``o.ready`` combinationally (two gates); put a register slice in front of the output if
that path becomes critical in a larger design.

``k`` and ``v2`` (the codec: wire format version 1, the paper's, or 2, the bounded one,
k in 1..16) travel with each group (sampled when the group is accepted), so a new k set
together with a frame's first group applies to that whole group.

A payload's raw tail (its L mod 4 last bytes) can ride in the group before it: with
``tail`` = r > 0 and ``count`` < 8, bytes 0..r-1 of value slot ``count`` are appended
after the packed fields, stored as they are (the slot's tag stays 00, ``length`` counts
them). The slot's value is forced into the raw band (bit 30 set), so its
CompressionBlock passes it through; the tree places it as a 4-byte field (no field
follows it), so ``data`` past ``length`` is not zero (up to 4 - r bytes of that slot),
which its consumer, the AlignmentUnit, ignores. This spares the engine a byte shifter
that would append the tail behind the group.

The decoded payload D (what the receiver restores: the decoded values, and the tail's
bytes as they are) leaves on the side, for a ``Checksum``: ``d_valid`` is high for one
clock per group, the clock the group moves from stage 2 to stage 3 (so in group order),
with ``d_first`` (the first group after a ``last`` one), ``d_last``, and ``d_data`` /
``d_mask`` combinational from stage 2's registers; ``d_data``'s bytes whose ``d_mask``
bit is clear are not part of D (they count as zero). Handing the Checksum a byte mask
lets its input flip-flops' resets do most of the decode's clearing
(``decoded_bytes``), and no copy of D follows the tree.

Version 2's extra work is kept off the deep paths by registers: each value's 8-bit
field shift (``v2_shift``: 127 - e - fl) is worked out in front of the input register
and each value's decode threshold (``decode_threshold``) in front of stage 2's, so
neither the blocks' field select nor D's bits sit behind a subtraction or the tag logic.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .compression_block import CompressionBlock, decode_threshold, decoded_bytes, v2_shift
from .shifter_tree import ShifterTree

__all__ = ["CompressionUnit", "GroupIn", "GroupOut", "LATENCY"]

GroupIn = data.StructLayout({
    "values": 256,   # value j = bits [32j+31:32j] (payload bytes 4j..4j+3, little-endian)
    "count": 4,      # valid values 1..8; values j >= count get tag 00 and no bytes
    "last": 1,       # the payload's final group (passed through)
    "tail": 2,       # r raw bytes in value slot `count` to append (0 when count = 8)
})

GroupOut = data.StructLayout({
    "data": 272,     # bytes 0..1: tag word LE (tag of value j in bits [2j+1:2j]), fields, tail
    "length": 6,     # valid bytes of data, 2..34 (tail included); bytes past it: any value
    "last": 1,
})

LATENCY = 5


class CompressionUnit(wiring.Component):
    k: In(7)
    v2: In(1)
    i: In(stream.Signature(GroupIn))
    o: Out(stream.Signature(GroupOut))
    # Decoded payload D, one group per d_valid (see the module docstring).
    d_valid: Out(1)
    d_first: Out(1)
    d_last: Out(1)
    d_data: Out(256)
    d_mask: Out(32)

    latency = LATENCY

    def __init__(self):
        super().__init__()
        # Groups in the pipeline: driven only when elaborated for formal checks (platform
        # "formal"), whose induction relates it to the groups in and out.
        self.formal_level = Signal(range(LATENCY + 1))

    def elaborate(self, platform):
        m = Module()
        en = Signal()
        m.d.comb += [en.eq(~self.o.valid | self.o.ready), self.i.ready.eq(en)]

        # Stage 1: input register.
        v1 = Signal()
        # Only the valid bits are reset; data registers are reset-less (a smaller
        # reset fan-out), their contents matter only under a valid bit.
        values1 = Signal(256, reset_less=True)
        vmask1 = Signal(8, reset_less=True)
        last1 = Signal(reset_less=True)
        k1 = Signal(7, reset_less=True)
        eb1 = Signal(reset_less=True)           # version 2
        # Version 2's 8-bit field shift per value, worked out in front of the register so
        # that neither the blocks nor the decoded value subtract fl from the exponent.
        d1 = [Signal(4, reset_less=True, name=f"d1_{j}") for j in range(8)]
        tsel1 = Signal(8, reset_less=True)      # the tail's value slot, one-hot
        r1 = Signal(2, reset_less=True)
        vmask_in = Signal(8)
        tsel_in = Signal(8)
        m.d.comb += [
            vmask_in.eq(Cat(*(self.i.payload.count > j for j in range(8)))),
            tsel_in.eq(Cat(*((self.i.payload.count == j) & (self.i.payload.tail != 0)
                             for j in range(8)))),
        ]
        raw_bit = Signal(256)       # bit 30 of the tail's slot: a raw-band exponent
        m.d.comb += raw_bit.eq(Cat(*(Cat(C(0, 30), tsel_in[j], C(0, 1)) for j in range(8))))
        with m.If(en):
            m.d.sync += [
                v1.eq(self.i.valid),
                values1.eq(self.i.payload.values | raw_bit),
                vmask1.eq(vmask_in),
                tsel1.eq(tsel_in),
                r1.eq(self.i.payload.tail),
                last1.eq(self.i.payload.last),
                k1.eq(self.k),
                eb1.eq(self.v2),
                *(d1[j].eq(v2_shift(m, self.i.payload.values[32 * j:32 * j + 32], self.k,
                                    f"d_in{j}")) for j in range(8)),
            ]

        # Stage 2: the eight CompressionBlocks; values past `count` become tag 00,
        # width 0; the tail's slot keeps its raw bits (tag 00 in the tag word, width 4
        # in the tree, r in the length).
        v2 = Signal()
        last2 = Signal(reset_less=True)
        tags2 = Signal(16, reset_less=True)
        codes2 = Signal(data.ArrayLayout(2, 8), reset_less=True)   # tree width codes
        bits2 = Signal(data.ArrayLayout(32, 8), reset_less=True)
        val2 = Signal(256, reset_less=True)
        tsel2 = Signal(8, reset_less=True)
        r2 = Signal(2, reset_less=True)
        # The decoded value's per-value threshold, worked out from the tag in front of
        # the stage-2 register (decode_threshold), so D's bits are two LUTs from it.
        thr2 = [Signal(5, reset_less=True, name=f"thr2_{j}") for j in range(8)]
        kexp2 = Signal(8, reset_less=True)
        half2 = Signal(8, reset_less=True)
        with m.If(en):
            m.d.sync += [v2.eq(v1), last2.eq(last1), tsel2.eq(tsel1), r2.eq(r1),
                         val2.eq(values1)]
        for j in range(8):
            # Bits above the width are cleared here, by the register's resets (the code
            # gives each byte's), so the blocks need not clear them.
            cb = CompressionBlock(clear_above_width=False, d8_ahead=True)
            m.submodules[f"cb{j}"] = cb
            m.d.comb += [cb.value.eq(values1[32 * j:32 * j + 32]), cb.k.eq(k1), cb.v2.eq(eb1),
                         cb.d8.eq(d1[j])]
            # The width code is the tag: 00, 01, 10, 11 for 0, 1, 2, 4 bytes.
            code = Signal(2, name=f"code{j}")
            m.d.comb += code.eq(Mux(vmask1[j] | tsel1[j], cb.tag, 0))
            keep = [code != 0, code[1], code == 3, code == 3]
            tag1 = Signal(2, name=f"tag1_{j}")
            m.d.comb += tag1.eq(Mux(vmask1[j], cb.tag, 0))
            thr, kexp, half = decode_threshold(m, values1[32 * j:32 * j + 32], tag1, tsel1[j],
                                               eb1, k1, f"dth{j}", d1[j])
            with m.If(en):
                m.d.sync += [
                    tags2[2 * j:2 * j + 2].eq(tag1),
                    codes2[j].eq(code),
                    thr2[j].eq(thr), kexp2[j].eq(kexp), half2[j].eq(half),
                ]
                for b in range(4):
                    m.d.sync += bits2[j][8 * b:8 * b + 8].eq(
                        Mux(keep[b], cb.bits[8 * b:8 * b + 8], 0))

        # Stages 3-5: the shifter tree, with the side data delayed alongside it.
        m.submodules.tree = tree = ShifterTree(registered=True, coded=True)
        m.d.comb += [tree.bits.eq(bits2), tree.width.eq(codes2), tree.en.eq(en)]

        # D from stage 2: values past count and the tail's slot have tag 00; the tail's
        # slot keeps its first r bytes.
        d_first = Signal(init=1)
        with m.If(en & v2):
            m.d.sync += d_first.eq(last2)
        d_data = []
        d_mask = []
        for j in range(8):
            dv, dm = decoded_bytes(m, val2[32 * j:32 * j + 32], tags2[2 * j:2 * j + 2],
                                   tsel2[j], name=f"dec{j}",
                                   pre=(thr2[j], kexp2[j], half2[j]))
            t = tsel2[j]
            d_data.append(dv)
            d_mask.append(Cat(dm[0], dm[1] & (~t | r2[1]), dm[2] & (~t | (r2 == 3)), dm[3]))
        m.d.comb += [
            self.d_valid.eq(en & v2), self.d_first.eq(d_first), self.d_last.eq(last2),
            self.d_data.eq(Cat(*d_data)), self.d_mask.eq(Cat(*d_mask)),
        ]

        v, side = v2, Cat(last2, tags2, r2)
        valids = []
        for n in range(tree.latency):
            v_next = Signal(name=f"v{3 + n}")
            side_next = Signal(len(side), name=f"side{3 + n}", reset_less=True)
            with m.If(en):
                m.d.sync += [v_next.eq(v), side_next.eq(side)]
            v, side = v_next, side_next
            valids.append(v_next)
        v5 = v
        if platform == "formal":
            m.d.comb += self.formal_level.eq(v1 + v2 + sum(valids))
        last5, tags5, r5 = side[0], side[1:17], side[17:19]
        # The group length: the tag word, the tree's length (a tail's slot counted as 4
        # bytes there) and r - 4 for a tail: r - 4 = r + 60 (mod 64) is Cat(r, 0b1111).
        total5 = Signal(6)
        m.d.comb += total5.eq(2 + tree.length + Mux(r5 != 0, Cat(r5, C(0b1111, 4)), 0))

        m.d.comb += [
            self.o.valid.eq(v5),
            self.o.payload.data.eq(Cat(tags5, tree.data)),
            self.o.payload.length.eq(total5),
            self.o.payload.last.eq(last5),
        ]
        return m
