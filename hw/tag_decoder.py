"""TagDecoder (paper Fig. 10): one group's 16-bit tag word -> field widths, field
offsets and the group length.

Tag i sits in bits ``[2i+1:2i]`` of the tag word: 00 -> 0 bytes, 01 -> 1, 10 -> 2,
11 -> 4. ``offset[j]`` is the byte offset of value j's field from the start of the
group, counting the 2 tag bytes (so ``offset[0] == 2``); ``length`` is the whole
group, 2..34 bytes. Purely combinational.

The widths of a short last group's missing values are not masked: the length of a
group always follows its whole tag word (the golden model does the same).
"""

from amaranth import *
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["TagDecoder", "GROUP_VALUES", "MAX_GROUP_BYTES"]

GROUP_VALUES = 8
MAX_GROUP_BYTES = 2 + 4 * GROUP_VALUES


class TagDecoder(wiring.Component):
    tags: In(16)
    width: Out(data.ArrayLayout(3, GROUP_VALUES))
    offset: Out(data.ArrayLayout(6, GROUP_VALUES))
    length: Out(6)

    def elaborate(self, platform):
        m = Module()
        widths = []
        for j in range(GROUP_VALUES):
            t = self.tags[2 * j:2 * j + 2]
            # 01 -> 0b001, 10 -> 0b010, 11 -> 0b100: each tag lights at most one bit,
            # so no adder is needed to turn a tag into its byte count.
            w = Signal(3, name=f"w{j}")
            m.d.comb += w.eq(Cat(t[0] & ~t[1], t[1] & ~t[0], t[1] & t[0]))
            widths.append(w)
            m.d.comb += self.width[j].eq(w)

        # Prefix sums as a balanced tree: pairs, quads, then the rest, so no offset
        # sits at the end of a 7-adder chain.
        pair = []
        for p in range(4):
            s = Signal(4, name=f"pair{p}")
            m.d.comb += s.eq(widths[2 * p] + widths[2 * p + 1])
            pair.append(s)
        quad0 = Signal(5)
        quad1 = Signal(5)
        m.d.comb += [quad0.eq(pair[0] + pair[1]), quad1.eq(pair[2] + pair[3])]
        prefix = [
            C(0, 5),
            widths[0],
            pair[0],
            pair[0] + widths[2],
            quad0,
            quad0 + widths[4],
            quad0 + pair[2],
            quad0 + pair[2] + widths[6],
        ]
        for j, pre in enumerate(prefix):
            m.d.comb += self.offset[j].eq(pre + 2)
        m.d.comb += self.length.eq(quad0 + quad1 + 2)
        return m
