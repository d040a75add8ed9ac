"""DecompressionBlock (paper Algorithm 3, Fig. 10): one tag + stored field -> float32.

- tag 11: the 32 stored bits are the float;
- tag 00: +0.0;
- tag 10 / 01: ``{s, q15}`` / ``{s, q7}``: |f| = q * 2^-15 (or 2^-7). The leading one
  of q gives the exponent, the bits below it the mantissa; q = 0 gives +0.0 whatever
  the sign.

Both fixed-point bands are handled by one 16-bit normaliser of x, |f| = x * 2^-16:
version 1 (the paper's codec) x = q15 << 1 or q7 << 9; version 2 (the bounded codec,
``v2`` high, fl = k >> 1 from the frame's shim) decodes the middle of the step,
(2q + 1) 2^-(w+1): x = {q15, 1} for tag 10 and, for tag 01, (2 q7 + 1) 2^-(fl+8), which
is x = {q7, 1} << 8 with the exponent lowered by fl (a frame constant, so no shift by fl
in front of the leading-zero count). With ``lz`` leading zeros in x, the float is
``{s, 126 - lz - (fl for version 2's tag 01), (x << lz)[14:0] << 8}``; x = 0 (version 1
only) gives +0.0.

``pipelined=False``: combinational, latency 0. ``pipelined=True``: one register
between the leading-zero count and the normalising shift (the two deep parts), so
``value`` follows ``tag``/``bits`` by ``LATENCY = 1`` clock; the register loads while
``en`` is high (tie it to the pipeline's advance signal).
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["DecompressionBlock"]


def _leading_zeros(m, x, name, keep=False):
    """(all_zero, count) of a power-of-two-wide signal, as a balanced tree.

    A flat priority encoder becomes a chain of muxes; halving keeps it log2 deep.
    """
    n = len(x)
    if n == 2:
        z = Signal(name=f"{name}_z")
        c = Signal(1, name=f"{name}_c")
        m.d.comb += [z.eq(~x[1] & ~x[0]), c.eq(~x[1])]
        return z, c
    half = n // 2
    zl, cl = _leading_zeros(m, x[:half], f"{name}l", keep)
    zh, ch = _leading_zeros(m, x[half:], f"{name}h", keep)
    # ``keep`` (the pipelined block, where the tree ends at a register): kept nodes, one
    # LUT level per tree level; left free, the mapper has spread the tree over chains of
    # small LUTs, 7 levels from the field register.
    attrs = {"keep": 1} if keep else {}
    z = Signal(name=f"{name}_z", attrs=attrs)
    c = Signal(len(cl) + 1, name=f"{name}_c", attrs=attrs)
    m.d.comb += [z.eq(zh & zl), c.eq(Mux(zh, Cat(cl, C(1, 1)), Cat(ch, C(0, 1))))]
    return z, c


class DecompressionBlock(wiring.Component):
    def __init__(self, pipelined=False):
        self.pipelined = bool(pipelined)
        self.LATENCY = 1 if self.pipelined else 0
        members = {"tag": In(2), "bits": In(32), "v2": In(1), "k": In(5), "value": Out(32)}
        if self.pipelined:
            members["en"] = In(1, init=1)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        tag, bits = self.tag, self.bits

        raw = Signal()
        fixed = Signal()        # tag 01 or 10
        sign = Signal()
        x = Signal(16)          # |f| = x * 2^-16
        ebase = Signal(8)       # 126, less fl for version 2's tag 01
        v2 = self.v2
        m.d.comb += [
            raw.eq(tag == 0b11),
            fixed.eq(tag[0] ^ tag[1]),
            sign.eq(Mux(tag[1], bits[15], bits[7])),
            x.eq(Mux(tag[1], Cat(v2, bits[0:15]), Cat(C(0, 8), v2, bits[0:7]))),
            ebase.eq(126 - Mux(v2 & ~tag[1], self.k[1:5], 0)),
        ]
        x_zero, lz = _leading_zeros(m, x, "lz", keep=self.pipelined)

        # Stage boundary: what the shift stage needs.
        s_raw, s_nz, s_sign = Signal(), Signal(), Signal()
        s_x = Signal(16)
        s_lz = Signal(4)
        s_ebase = Signal(8)
        s_bits = Signal(32)
        stage = [
            s_raw.eq(raw),
            s_nz.eq(fixed & ~x_zero),
            s_sign.eq(sign),
            s_x.eq(x),
            s_lz.eq(lz),
            s_ebase.eq(ebase),
            s_bits.eq(bits),
        ]
        if self.pipelined:
            with m.If(self.en):
                m.d.sync += stage
        else:
            m.d.comb += stage

        norm = Signal(16)
        exp = Signal(8)
        m.d.comb += [
            norm.eq(s_x << s_lz),
            exp.eq(s_ebase - s_lz),
        ]
        with m.If(s_raw):
            m.d.comb += self.value.eq(s_bits)
        with m.Elif(s_nz):
            m.d.comb += self.value.eq(Cat(C(0, 8), norm[0:15], exp, s_sign))
        with m.Else():
            m.d.comb += self.value.eq(0)
        return m
