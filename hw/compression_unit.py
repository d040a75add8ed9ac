"""CompressionUnit (paper Fig. 9): one group of 8 float32 values per clock -> tag word +
packed fields.

Pipeline, 5 clocks from an accepted group to its output:
  1. input register (values, valid-value mask from ``count``, last, k);
  2. eight CompressionBlocks -> register (tags, fields, widths, and the values); the
     fields' bytes above their width are left uncleared (the tree masks by width);
  3-5. ShifterTree, one register per tree level; beside its first level, the decoded
     values from the registered values and tags (``decoded_value``), which keeps that
     logic off the CompressionBlocks' deep path.
The whole pipeline advances together (``en = ~o.valid | o.ready``): a low ``o.ready``
freezes every stage, so nothing is lost or duplicated, and a group is accepted every
clock while the output is taken. ``i.ready`` is that same ``en``, so it follows
``o.ready`` combinationally (two gates); put a register slice in front of the output if
that path becomes critical in a larger design.

``k`` travels with each group (sampled when the group is accepted), so a new k set
together with a frame's first group applies to that whole group.

A payload's raw tail (its L mod 4 last bytes) can ride in the group before it: with
``tail`` = r > 0 and ``count`` < 8, bytes 0..r-1 of value slot ``count`` are appended
after the packed fields, stored as they are (the slot's tag stays 00, its decoded
value 0, ``length`` counts them). The slot's value is forced into the raw band (bit 30
set), so its CompressionBlock passes it through and the tree keeps its first r bytes;
this spares the engine a byte shifter that would append the tail behind the group.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .compression_block import CompressionBlock, decoded_value
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
    "length": 6,     # valid bytes of data, 2..34 (tail included)
    "decoded": 256,  # the 8 values as the receiver restores them (0 for j >= count)
    "last": 1,
})

LATENCY = 5


class CompressionUnit(wiring.Component):
    k: In(7)
    i: In(stream.Signature(GroupIn))
    o: Out(stream.Signature(GroupOut))

    latency = LATENCY

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
            ]

        # Stage 2: the eight CompressionBlocks; values past `count` become tag 00,
        # width 0 (the tree drops their bits by width); the tail's slot keeps its raw
        # bits with width r.
        v2 = Signal()
        last2 = Signal(reset_less=True)
        tags2 = Signal(16, reset_less=True)
        bits2 = Signal(data.ArrayLayout(32, 8), reset_less=True)
        widths2 = Signal(data.ArrayLayout(3, 8), reset_less=True)
        val2 = Signal(256, reset_less=True)
        with m.If(en):
            m.d.sync += [v2.eq(v1), last2.eq(last1)]
        for j in range(8):
            # The tree masks every field by its width (it must anyway, for values past
            # count and the tail's slot), so the blocks need not clear bits above it.
            cb = CompressionBlock(clear_above_width=False)
            m.submodules[f"cb{j}"] = cb
            m.d.comb += [cb.value.eq(values1[32 * j:32 * j + 32]), cb.k.eq(k1)]
            with m.If(en):
                m.d.sync += [
                    tags2[2 * j:2 * j + 2].eq(Mux(vmask1[j], cb.tag, 0)),
                    bits2[j].eq(cb.bits),
                    widths2[j].eq(Mux(vmask1[j], cb.width, Mux(tsel1[j], r1, 0))),
                    val2[32 * j:32 * j + 32].eq(values1[32 * j:32 * j + 32]),
                ]

        # Stages 3-5: the shifter tree, with the side data delayed alongside it.
        m.submodules.tree = tree = ShifterTree(registered=True)
        m.d.comb += [tree.bits.eq(bits2), tree.width.eq(widths2), tree.en.eq(en)]
        # The group length (tag word + fields) is summed beside the tree so that the
        # output length comes straight from a register.
        total2 = Signal(6)
        m.d.comb += total2.eq(2 + sum(widths2[j] for j in range(8)))
        # Decoded values (tag 00 past count and in the tail's slot: 0), registered at 3.
        dec_c = Signal(256)
        m.d.comb += dec_c.eq(Cat(*(decoded_value(m, val2[32 * j:32 * j + 32],
                                                 tags2[2 * j:2 * j + 2], name=f"dec{j}")
                                   for j in range(8))))
        dec = dec_c
        v, side = v2, Cat(last2, tags2, total2)
        for n in range(tree.latency):
            v_next = Signal(name=f"v{3 + n}")
            side_next = Signal(len(side), name=f"side{3 + n}", reset_less=True)
            dec_next = Signal(256, name=f"dec{3 + n}", reset_less=True)
            with m.If(en):
                m.d.sync += [v_next.eq(v), side_next.eq(side), dec_next.eq(dec)]
            v, side, dec = v_next, side_next, dec_next
        v5, dec5 = v, dec
        last5, tags5, total5 = side[0], side[1:17], side[17:23]

        m.d.comb += [
            self.o.valid.eq(v5),
            self.o.payload.data.eq(Cat(tags5, tree.data)),
            self.o.payload.length.eq(total5),
            self.o.payload.decoded.eq(dec5),
            self.o.payload.last.eq(last5),
        ]
        return m
