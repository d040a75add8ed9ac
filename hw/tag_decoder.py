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
           "tag_byte_prefix", "tag_byte_bytes", "group_length"]

GROUP_VALUES = 8
MAX_GROUP_BYTES = 2 + 4 * GROUP_VALUES
_WIDTH = (0, 1, 2, 4)
TAG_BYTES_WIDTH = 5          # the bytes of one tag byte's four fields: 0..16


def _prefix_table(byte, upto):
    return sum(_WIDTH[(byte >> (2 * i)) & 3] for i in range(upto))


def tag_byte_prefix(m, byte, upto, name, bias=0):
    """Signal = bias + the stored bytes of the first ``upto`` (1..4) tags in ``byte``,
    as one 256-entry table."""
    return _table(m, byte, [bias + _prefix_table(b, upto) for b in range(256)], name)


def _table(m, bits, values, name):
    out = Signal(range(max(values) + 1), name=name)
    with m.Switch(bits):
        for b, v in enumerate(values):
            with m.Case(b):
                m.d.comb += out.eq(v)
    return out


def tag_byte_bytes(m, byte, name):
    """Stored bytes (0..16) of the four tags in ``byte``: one 8-input table."""
    out = Signal(5, name=name)
    with m.Switch(byte):
        for b in range(256):
            with m.Case(b):
                m.d.comb += out.eq(sum(_WIDTH[(b >> (2 * i)) & 3] for i in range(4)))
    return out


def group_length(m, b0, b1, name, bias=0):
    """Signal = bias + the stored bytes of a tag word (bytes b0, b1), in three LUT
    levels: the widths of tags 0-2, 3-5 and 6-7 are three 6-input tables, reduced
    carry-save (sum and majority bits, absorbed into the adder's LUTs) into one adder.
    Two byte lookups and an adder would take four (an 8-input table maps to two)."""
    tags = Cat(b0, b1)
    parts = []
    for lo, hi, bb in ((0, 3, bias), (3, 6, 0), (6, 8, 0)):
        n = hi - lo
        vals = [bb + sum(_WIDTH[(x >> (2 * i)) & 3] for i in range(n)) for x in range(1 << (2 * n))]
        parts.append(_table(m, tags[2 * lo:2 * hi], vals, f"{name}_p{lo}"))
    a, b, c = (Signal(4, name=f"{name}_{x}") for x in "abc")
    m.d.comb += [a.eq(parts[0]), b.eq(parts[1]), c.eq(parts[2])]
    s = Signal(4, name=f"{name}_s")
    cy = Signal(4, name=f"{name}_c")
    m.d.comb += [s.eq(a ^ b ^ c), cy.eq((a & b) | (a & c) | (b & c))]
    out = Signal(6, name=name)
    m.d.comb += out.eq(s + Cat(C(0, 1), cy))
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
