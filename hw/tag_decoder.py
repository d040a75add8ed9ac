"""TagDecoder (paper Fig. 10): one group's 16-bit tag word -> field widths, field
offsets and the group length.

Tag i sits in bits ``[2i+1:2i]`` of the tag word: 00 -> 0 bytes, 01 -> 1, 10 -> 2,
11 -> 4. ``offset[j]`` is the byte offset of value j's field from the start of the
group, counting the 2 tag bytes (so ``offset[0] == 2``); ``length`` is the whole
group, 2..34 bytes. Purely combinational.

The widths of a short last group's missing values are not masked: the length of a
group always follows its whole tag word (the golden model does the same).

Why tables: a prefix sum of widths is a chain of small adders, ten logic levels once
mapped. Each tag byte (four tags) is an 8-input function, so every prefix within a
byte is one table lookup (one LUT level plus the slice's wide muxes); only the second
byte's prefixes need one adder to put the first byte's total in front.
"""

from amaranth import *
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["TagDecoder", "GROUP_VALUES", "MAX_GROUP_BYTES", "TAG_BYTES_WIDTH",
           "tag_byte_prefix"]

GROUP_VALUES = 8
MAX_GROUP_BYTES = 2 + 4 * GROUP_VALUES
_WIDTH = (0, 1, 2, 4)
TAG_BYTES_WIDTH = 5          # the bytes of one tag byte's four fields: 0..16


def _prefix_table(byte, upto):
    return sum(_WIDTH[(byte >> (2 * i)) & 3] for i in range(upto))


def tag_byte_prefix(m, byte, upto, name, bias=0):
    """Signal = bias + the stored bytes of the first ``upto`` (1..4) tags in ``byte``,
    as one 256-entry table."""
    values = [bias + _prefix_table(b, upto) for b in range(256)]
    out = Signal(range(max(values) + 1), name=name)
    with m.Switch(byte):
        for b, v in enumerate(values):
            with m.Case(b):
                m.d.comb += out.eq(v)
    return out


class TagDecoder(wiring.Component):
    tags: In(16)
    width: Out(data.ArrayLayout(3, GROUP_VALUES))
    offset: Out(data.ArrayLayout(6, GROUP_VALUES))
    length: Out(6)

    def elaborate(self, platform):
        m = Module()
        for j in range(GROUP_VALUES):
            t = self.tags[2 * j:2 * j + 2]
            # 01 -> 0b001, 10 -> 0b010, 11 -> 0b100: one bit per tag, no adder.
            m.d.comb += self.width[j].eq(Cat(t[0] & ~t[1], t[1] & ~t[0], t[1] & t[0]))

        lo, hi = self.tags[:8], self.tags[8:]
        m.d.comb += self.offset[0].eq(2)
        for j in range(1, 4):
            m.d.comb += self.offset[j].eq(tag_byte_prefix(m, lo, j, f"off{j}", bias=2))
        total_lo = tag_byte_prefix(m, lo, 4, "total_lo", bias=2)
        m.d.comb += self.offset[4].eq(total_lo)
        for j in range(1, 4):
            m.d.comb += self.offset[4 + j].eq(total_lo + tag_byte_prefix(m, hi, j, f"off{4 + j}"))
        m.d.comb += self.length.eq(total_lo + tag_byte_prefix(m, hi, 4, "total_hi"))
        return m
