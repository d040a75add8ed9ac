"""CompressionUnit (paper Fig. 9): one group of 8 float32 values per clock -> tag word +
packed fields.

Pipeline, 5 clocks from an accepted group to its output:
  1. input register (values, valid-value mask from ``count``, last, k);
  2. eight CompressionBlocks -> register (tags, fields, widths, decoded values);
  3-5. ShifterTree, one register per tree level.
The whole pipeline advances together (``en = ~o.valid | o.ready``): a low ``o.ready``
freezes every stage, so nothing is lost or duplicated, and a group is accepted every
clock while the output is taken. ``i.ready`` is that same ``en``, so it follows
``o.ready`` combinationally (two gates); put a register slice in front of the output if
that path becomes critical in a larger design.

``k`` travels with each group (sampled when the group is accepted), so a new k set
together with a frame's first group applies to that whole group.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .compression_block import CompressionBlock
from .shifter_tree import ShifterTree

__all__ = ["CompressionUnit", "GroupIn", "GroupOut", "LATENCY"]

GroupIn = data.StructLayout({
    "values": 256,   # value j = bits [32j+31:32j] (payload bytes 4j..4j+3, little-endian)
    "count": 4,      # valid values 1..8; values j >= count get tag 00 and no bytes
    "last": 1,       # the payload's final group (passed through)
})

GroupOut = data.StructLayout({
    "data": 272,     # bytes 0..1: tag word LE (tag of value j in bits [2j+1:2j]), then fields
    "length": 6,     # valid bytes of data, 2..34
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
        vmask_in = Signal(8)
        m.d.comb += vmask_in.eq(Cat(*(self.i.payload.count > j for j in range(8))))
        with m.If(en):
            m.d.sync += [
                v1.eq(self.i.valid),
                values1.eq(self.i.payload.values),
                vmask1.eq(vmask_in),
                last1.eq(self.i.payload.last),
                k1.eq(self.k),
            ]

        # Stage 2: the eight CompressionBlocks; values past `count` become tag 00,
        # width 0, decoded 0 (the tree drops their bits by width).
        v2 = Signal()
        last2 = Signal(reset_less=True)
        tags2 = Signal(16, reset_less=True)
        bits2 = Signal(data.ArrayLayout(32, 8), reset_less=True)
        widths2 = Signal(data.ArrayLayout(3, 8), reset_less=True)
        dec2 = Signal(256, reset_less=True)
        with m.If(en):
            m.d.sync += [v2.eq(v1), last2.eq(last1)]
        for j in range(8):
            cb = CompressionBlock()
            m.submodules[f"cb{j}"] = cb
            m.d.comb += [cb.value.eq(values1[32 * j:32 * j + 32]), cb.k.eq(k1)]
            with m.If(en):
                m.d.sync += [
                    tags2[2 * j:2 * j + 2].eq(Mux(vmask1[j], cb.tag, 0)),
                    bits2[j].eq(cb.bits),
                    widths2[j].eq(Mux(vmask1[j], cb.width, 0)),
                    dec2[32 * j:32 * j + 32].eq(Mux(vmask1[j], cb.decoded, 0)),
                ]

        # Stages 3-5: the shifter tree, with the side data delayed alongside it.
        m.submodules.tree = tree = ShifterTree(registered=True)
        m.d.comb += [tree.bits.eq(bits2), tree.width.eq(widths2), tree.en.eq(en)]
        # The group length (tag word + fields) is summed beside the tree so that the
        # output length comes straight from a register.
        total2 = Signal(6)
        m.d.comb += total2.eq(2 + sum(widths2[j] for j in range(8)))
        v, side = v2, Cat(last2, tags2, dec2, total2)
        for n in range(tree.latency):
            v_next = Signal(name=f"v{3 + n}")
            side_next = Signal(len(side), name=f"side{3 + n}", reset_less=True)
            with m.If(en):
                m.d.sync += [v_next.eq(v), side_next.eq(side)]
            v, side = v_next, side_next
        v5 = v
        last5, tags5, dec5, total5 = side[0], side[1:17], side[17:273], side[273:279]

        m.d.comb += [
            self.o.valid.eq(v5),
            self.o.payload.data.eq(Cat(tags5, tree.data)),
            self.o.payload.length.eq(total5),
            self.o.payload.decoded.eq(dec5),
            self.o.payload.last.eq(last5),
        ]
        return m
