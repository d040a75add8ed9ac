"""ShifterTree (paper Fig. 9): packs 8 variable-width fields into one byte vector.

A binary tree of pair merges: 1+1 -> 2 fields (up to 8 bytes), 2+2 -> 4 (16 bytes),
4+4 -> 8 (32 bytes). A merge keeps the left part and ORs in the right part shifted up by
the left part's length; every part is zero above its length, so the OR is exact. Shifts
are over whole bytes (a byte-granular log shifter: one 2:1 mux per length bit), which
keeps each level to a few LUTs; with ``registered=True`` a register follows every level.

``coded=True`` is the form the CompressionUnit uses: the fields arrive already zero
above their widths (it clears them with its register's resets) and each width as a
2-bit code (0, 1, 2, 3 for 0, 1, 2, 4 bytes, the CompressionBlock's tag). Then the first
level needs no masks, and each of its output bytes is a 4:1 select by the left field's
code: one LUT6 per bit instead of about two.
"""

from amaranth import *
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["ShifterTree", "shift_bytes_left", "CODE_WIDTHS"]

CODE_WIDTHS = (0, 1, 2, 4)      # field width in bytes for each 2-bit code


def shift_bytes_left(m, value, amount, nbytes, name="shl"):
    """``value << (8 * amount)`` truncated to ``nbytes`` bytes, as a log shifter whose
    stages are intermediate Signals (one 2:1 byte mux per bit of ``amount``)."""
    width = 8 * nbytes
    cur = Signal(width, name=f"{name}_in")
    m.d.comb += cur.eq(value)
    for i, bit in enumerate(amount):
        step = 8 << i
        nxt = Signal(width, name=f"{name}_s{i}")
        if step >= width:
            m.d.comb += nxt.eq(Mux(bit, 0, cur))
        else:
            m.d.comb += nxt.eq(Mux(bit, Cat(C(0, step), cur[:width - step]), cur))
        cur = nxt
    return cur


class ShifterTree(wiring.Component):
    """8 (``bits``, ``width``) fields -> ``data`` (field 0 at byte 0, bytes past
    ``length`` zero) and ``length`` (0..32 bytes).

    ``width`` must be 0, 1, 2 or 4 bytes (what a CompressionBlock gives); bits above a
    field's width are ignored. With ``coded=True``, ``width`` is the 2-bit code of
    ``CODE_WIDTHS`` instead and bits above a field's width must be zero. With
    ``registered=True`` (the default, as the CompressionUnit uses it) a register follows
    each of the three levels (latency 3 clocks, ``latency`` attribute) and advances only
    while ``en`` is high, so a stalled pipeline holds its place; with
    ``registered=False`` the tree is combinational (about 10 LUT levels) and ``en`` is
    unused.
    """

    def __init__(self, registered=True, coded=False):
        self.registered = registered
        self.coded = coded
        self.latency = 3 if registered else 0
        super().__init__({
            "bits": In(data.ArrayLayout(32, 8)),
            "width": In(data.ArrayLayout(2 if coded else 3, 8)),
            "en": In(1, init=1),
            "data": Out(256),
            "length": Out(6),
        })

    def _stage(self, m, value, name):
        # Optional pipeline register after a tree level, frozen while en is low.
        if not self.registered:
            return value
        reg = Signal.like(value, name=f"{name}_r", reset_less=True)   # data only
        with m.If(self.en):
            m.d.sync += reg.eq(value)
        return reg

    def _level1_coded(self, m):
        # Pairs of pre-masked fields, selected per output byte by the left field's code:
        # byte i is the left field's byte i below its width, else the right field's byte
        # i - width (or zero).
        parts, lens = [], []
        for p in range(4):
            a, b = self.bits[2 * p], self.bits[2 * p + 1]
            ca, cb = self.width[2 * p], self.width[2 * p + 1]
            name = f"l1p{p}"
            merged = Signal(64, name=name)
            for i in range(8):
                cands = []
                for w in CODE_WIDTHS:
                    if i < w:
                        cands.append(a[8 * i:8 * i + 8])
                    elif i - w < 4:
                        cands.append(b[8 * (i - w):8 * (i - w) + 8])
                    else:
                        cands.append(C(0, 8))
                m.d.comb += merged[8 * i:8 * i + 8].eq(
                    Mux(ca[1], Mux(ca[0], cands[3], cands[2]), Mux(ca[0], cands[1], cands[0])))
            wa = Mux(ca == 3, 4, ca)
            wb = Mux(cb == 3, 4, cb)
            length = Signal(4, name=f"{name}_len")
            m.d.comb += length.eq(wa + wb)
            parts.append(self._stage(m, merged, name))
            lens.append(self._stage(m, length, f"{name}_len"))
        return parts, lens

    def elaborate(self, platform):
        m = Module()

        if self.coded:
            parts, lens = self._level1_coded(m)
            nbytes, level = 8, 1
        else:
            # Level 0: drop bits above each field's width (so every part is zero above
            # its length).
            parts, lens = [], []
            for j in range(8):
                w = self.width[j]
                mask = Signal(32, name=f"mask{j}")
                m.d.comb += mask.eq(Cat(*((w > b).replicate(8) for b in range(4))))
                p = Signal(32, name=f"f{j}")
                m.d.comb += p.eq(self.bits[j] & mask)
                parts.append(p)
                lens.append(w)
            nbytes, level = 4, 0

        while len(parts) > 1:
            level += 1
            new_parts, new_lens = [], []
            for p in range(len(parts) // 2):
                name = f"l{level}p{p}"
                a, b = parts[2 * p], parts[2 * p + 1]
                la, lb = lens[2 * p], lens[2 * p + 1]
                shifted = shift_bytes_left(m, b, la, 2 * nbytes, name=f"{name}_sh")
                merged = Signal(16 * nbytes, name=name)
                length = Signal(range(2 * nbytes + 1), name=f"{name}_len")
                m.d.comb += [merged.eq(a | shifted), length.eq(la + lb)]
                new_parts.append(self._stage(m, merged, name))
                new_lens.append(self._stage(m, length, f"{name}_len"))
            parts, lens = new_parts, new_lens
            nbytes *= 2

        m.d.comb += [self.data.eq(parts[0]), self.length.eq(lens[0])]
        return m
