"""CompressionBlock (paper Fig. 9, Algorithm 2): one float32 -> tag, stored field, width.

Combinational; the CompressionUnit registers its inputs and outputs around it.

The band limits need no adder: for k in 1..126, ``T = 127 - k`` is ``~k`` on 7 bits and
``M = T + ceil(k / 2) = 127 - floor(k / 2)`` is ``~(k >> 1)`` on 7 bits, so the block takes
``k`` directly (no separate T/M ports). k outside 1..126 is not a valid configuration (the
engine bypasses such frames); the block then gives some tag, but nothing an engine emits.

LUT depth is kept small by never searching for a leading one:
- the stored magnitude is ``(1.m >> (127 - e))``; only shifts 1..15 leave bits in
  ``[22:8]`` (``127 - e`` is ``~e`` on 7 bits when e < 127, again no adder), so each
  stored bit is a 16-way mux of the 24-bit significand (with ``clear_above_width=False``
  built as two 4:1 stages, the first on a kept net, with the zero for larger shifts in
  the final select: fewer LUTs than the mapper finds for the 16-way muxes);
- the decoded value is ``f`` with the mantissa bits below the band's resolution cleared
  (2^-15 for tag 10, 2^-7 for tag 01), a mask that depends only on ``e`` and the band
  (one 5-bit threshold per value, see ``decoded_value``); it is +0.0 when the stored
  magnitude is 0, i.e. when ``e < 112`` (tag 10) or ``e < 120`` (tag 01).
  ``decoded_bytes`` gives it as data plus a byte mask, for a consumer whose flip-flop
  resets clear whole bytes (the CompressionUnit's D checksum).

Wire format version 2 (``v2`` high, the bounded codec ``inceptionn_eb``, k in 1..16):
same tags, bands and widths; with fl = floor(k/2) the 8-bit field holds
``{s, floor(|f| 2^(fl+7))}`` = ``{s, q15 >> (8 - fl)}`` (a frame-constant shift of the
16-bit field's magnitude, so no second significand shifter), and the decoded value is
the middle of the step: the bits below the band's resolution cleared, the bit just
below it set (never 0, so the exponent and sign always survive). Both bands' thresholds
stay one 5-bit number per value; version 2's 8-bit one is ``16 + sh - fl``.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["CompressionBlock", "decoded_value", "decoded_bytes", "decode_threshold", "v2_shift", "TAG_ZERO", "TAG_8BIT",
           "TAG_16BIT", "TAG_RAW"]

TAG_ZERO, TAG_8BIT, TAG_16BIT, TAG_RAW = 0, 1, 2, 3


def v2_shift(m, f, k, name="d8"):
    """Version 2's 8-bit field shift d = (127 - e) - fl on 4 bits (1..8 in that band):
    floor(|f| 2^(fl+7)) is the significand shifted down by 16 + d. A pipeline computes it
    a clock ahead (the CompressionUnit registers it with the values) and hands it to the
    blocks' ``d8`` port and to ``decoded_bytes``, so no subtraction sits in their paths."""
    d = Signal(4, name=name)
    m.d.comb += d.eq((~f[23:27]) - k[1:5])
    return d


def decode_threshold(m, f, tag, keep_all, v2, k, name, d8=None):
    """(thr, keep_exp, half) for ``decoded_value`` / ``decoded_bytes``: the first kept
    mantissa bit (31: none), whether the exponent and sign survive, and whether the bit
    at thr - 1 is set (version 2's middle of the step; thr - 1 = 23 is the leading one).

    Mantissa bit i is worth 2^(e - 150 + i). Version 1 keeps i >= 8 + sh (tag 10) or
    i >= 16 + sh (tag 01), with sh = 127 - e = ~e on 7 bits; version 2 keeps the same
    for tag 10 and i >= 16 + sh - fl for tag 01 (sh - fl in 1..8 in that band)."""
    e = f[23:31]
    sh = Signal(7, name=f"{name}_sh")
    m.d.comb += sh.eq(~e[0:7])
    raw, t16, t8 = tag == TAG_RAW, tag == TAG_16BIT, tag == TAG_8BIT
    nz16 = Signal(name=f"{name}_nz16")      # the 16-bit field is not 0 (or version 2)
    nz8 = Signal(name=f"{name}_nz8")        # the 8-bit field is not 0 (or version 2)
    m.d.comb += [nz16.eq((sh[4:7] == 0) | v2), nz8.eq((sh[3:7] == 0) | v2)]
    if d8 is None:                          # version 2, tag 01: sh - fl (1..8)
        d8 = v2_shift(m, f, k, f"{name}_d8")
    thr = Signal(5, name=f"{name}_thr")
    with m.If(raw | keep_all):
        m.d.comb += thr.eq(0)
    with m.Elif(t16 & nz16):
        m.d.comb += thr.eq(sh[0:4] + 8)
    with m.Elif(t8 & nz8 & v2):
        m.d.comb += thr.eq(d8 + 16)
    with m.Elif(t8 & nz8):
        m.d.comb += thr.eq(Cat(sh[0:3], C(0b10, 2)))    # sh + 16, sh <= 7
    with m.Else():
        m.d.comb += thr.eq(31)
    keep_exp = Signal(name=f"{name}_keep_exp")
    half = Signal(name=f"{name}_half")
    m.d.comb += [keep_exp.eq(raw | (t16 & nz16) | (t8 & nz8)),
                 half.eq(v2 & ~keep_all & (t16 | t8))]
    return thr, keep_exp, half


def _kept_bit(f, i, thr, half):
    """Decoded mantissa bit i: kept at or above thr, set at thr - 1 when ``half``."""
    return (f[i] & (thr <= i)) | (half & (thr == i + 1))


def decoded_value(m, f, tag, name="dec", v2=C(0, 1), k=C(0, 7), pre=None):
    """What the receiver restores from float32 bits ``f`` stored with ``tag``.

    Version 1 (``v2`` low): ``f`` with the mantissa bits below the band's resolution
    cleared (2^-15 for tag 10, 2^-7 for tag 01), +0.0 when the stored magnitude is 0;
    ``f`` for tag 11, +0.0 for tag 00. Version 2: the middle of the step (resolution
    2^-15 or 2^-(fl+7), the bit below it set). ``tag`` must be the one the
    CompressionBlock gives ``f`` (with the same k), or 00 (so tags 10 and 01 mean
    e < 127). A function of (f, tag, k, v2) alone, so a pipeline may compute it a clock
    after the tag (the CompressionUnit does).

    Each kept bit compares one 5-bit threshold per value (0 for tag 11, 31 for none)
    with a constant: one LUT per bit, instead of a compare on e per band and a band
    select per bit (version 2's set bit adds a second compare of the same threshold).
    ``pre``: ``decode_threshold``'s result registered a clock ahead, as for
    ``decoded_bytes``."""
    s, e = f[31], f[23:31]
    if pre is None:
        pre = decode_threshold(m, f, tag, C(0, 1), v2, k, name)
    thr, keep_exp, half = pre
    out = Signal(32, name=name)
    m.d.comb += out.eq(Cat(*(_kept_bit(f, i, thr, half) for i in range(23)),
                           e & keep_exp.replicate(8), s & keep_exp))
    return out


def decoded_bytes(m, f, tag, keep_all, name="dbytes", v2=C(0, 1), k=C(0, 7), d8=None,
                  pre=None):
    """``decoded_value`` split for a consumer that zeroes whole bytes itself (a Checksum
    byte mask, i.e. flip-flop resets): returns ``(data, mask)``, 32 bits and 4 byte-mask
    bits, with ``data & mask`` (bytes) the decoded value. ``keep_all``: pass ``f`` as
    it is (a raw tail's slot, tag 00; the caller narrows the mask to its bytes).

    Only bits 8..23 take a LUT each: mantissa bits 0..7 survive only raw (tags 10 and 01
    mean e < 127, so the first kept bit is at least 9 and version 2's set bit at least
    8), a byte-mask bit; the sign and exponent bits 1..7 (byte 3) survive exactly when
    the exponent does, another; bit 23 (e[0]) shares byte 2 with mantissa bits and keeps
    its own AND. ``d8``: ``v2_shift`` of (f, k) computed ahead, if the caller has it;
    ``pre``: ``decode_threshold``'s (thr, keep_exp, half) registered a clock ahead (the
    CompressionUnit does: then each bit is two levels of LUTs from flip-flops)."""
    s, e, mant = f[31], f[23:31], f[0:23]
    if pre is None:
        pre = decode_threshold(m, f, tag, keep_all, v2, k, name, d8)
    thr, keep_exp, half = pre
    raw = tag == TAG_RAW
    out = Signal(32, name=name)
    m.d.comb += out.eq(Cat(mant[0:8], *(_kept_bit(f, i, thr, half) for i in range(8, 23)),
                           e[0] & (keep_exp | keep_all), e[1:8], s))
    mask = Signal(4, name=f"{name}_mask")
    m.d.comb += mask.eq(Cat(raw | keep_all, C(1, 1), C(1, 1), keep_exp))
    return out, mask


def _q7_v2(m, sig, d8):
    """Version 2's 8-bit magnitude floor(|f| 2^(fl+7)) = sig >> (16 + d8), d8 in 1..8:
    an 8:1 select per bit on d8 mod 8 (one LUT6 and its MUXF7/MUXF8)."""
    out = Signal(7)
    for i in range(7):
        src = [sig[16 + i + d] if 16 + i + d < len(sig) else C(0, 1) for d in range(1, 9)]
        m.d.comb += out[i].eq(Array(src[7:] + src[:7])[d8[0:3]])
    return out


class CompressionBlock(wiring.Component):
    """``value`` (float32 bits), ``k`` and ``v2`` (the codec: 0 the paper's, wire format
    version 1; 1 the bounded one, version 2, k in 1..16) -> ``tag``, ``bits``
    (LSB-aligned stored field, zero above ``width`` bytes), ``width`` (0/1/2/4 bytes)
    and ``decoded`` (the float32 bits the receiver restores).

    ``clear_above_width=False``: ``bits`` above ``width`` bytes are left as whatever is
    cheapest (parts of ``f`` or of the fixed-point field), for a consumer that masks
    by ``width`` itself (the CompressionUnit's ShifterTree does); that drops the
    per-tag select of most bits.

    ``d8_ahead=True``: a ``d8`` port takes ``v2_shift(value, k)``, registered by the
    caller alongside ``value`` (the CompressionUnit), instead of the block's own
    subtraction in front of version 2's 8-bit field select."""

    def __init__(self, clear_above_width=True, d8_ahead=False):
        self.clear_above_width = clear_above_width
        self.d8_ahead = d8_ahead
        members = {"value": In(32), "k": In(7), "v2": In(1), "tag": Out(2), "bits": Out(32),
                   "width": Out(3), "decoded": Out(32)}
        if d8_ahead:
            # v2_shift(value, k), computed by the caller a clock ahead
            members["d8"] = In(4)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        f = self.value
        s, e, mant = f[31], f[23:31], f[0:23]
        d8 = self.d8 if self.d8_ahead else v2_shift(m, f, self.k)

        t = Signal(7)        # T = 127 - k
        mlim = Signal(7)     # M = 127 - floor(k/2)
        m.d.comb += [t.eq(~self.k), mlim.eq(~(self.k >> 1))]

        raw = Signal()       # e >= 127: |f| >= 1, Inf, NaN
        ge_t = Signal()
        ge_m = Signal()
        m.d.comb += [
            raw.eq(e[7] | (e[0:7] == 0x7F)),
            ge_t.eq(e >= t),
            ge_m.eq(e >= mlim),
        ]
        tag = Signal(2)
        with m.If(raw):
            m.d.comb += tag.eq(TAG_RAW)
        with m.Elif(ge_m):
            m.d.comb += tag.eq(TAG_16BIT)
        with m.Elif(ge_t):
            m.d.comb += tag.eq(TAG_8BIT)
        with m.Else():
            m.d.comb += tag.eq(TAG_ZERO)

        # Fixed-point magnitude: (1.m) >> (127 - e); bits [22:8] survive only for
        # shifts 1..15 (e = 112..126). Larger shifts (e < 112) leave nothing.
        sh = Signal(7)
        m.d.comb += sh.eq(~e[0:7])
        shifted = Signal(24)
        m.d.comb += shifted.eq(Cat(mant, C(1, 1)) >> sh[0:4])
        q15 = Signal(15)
        m.d.comb += q15.eq(Mux(sh[4:7] != 0, 0, shifted[8:23]))
        q7 = Signal(7)
        m.d.comb += q7.eq(Mux(self.v2, _q7_v2(m, Cat(mant, C(1, 1)), d8), q15[8:15]))

        width = Signal(3)
        bits = Signal(32)
        with m.Switch(tag):
            with m.Case(TAG_RAW):
                m.d.comb += width.eq(4)
            with m.Case(TAG_16BIT):
                m.d.comb += width.eq(2)
            with m.Case(TAG_8BIT):
                m.d.comb += width.eq(1)
            # TAG_ZERO: width 0 (comb default).
        if self.clear_above_width:
            with m.Switch(tag):
                with m.Case(TAG_RAW):
                    m.d.comb += bits.eq(f)
                with m.Case(TAG_16BIT):
                    m.d.comb += bits.eq(Cat(q15, s))
                with m.Case(TAG_8BIT):
                    m.d.comb += bits.eq(Cat(q7, s))
                # TAG_ZERO: 0 (comb default).
        else:
            # Only the bytes below width matter: byte 0 per tag, byte 1 raw or 16-bit,
            # bytes 2-3 raw only (so f as it is). The magnitude is shifted in two 4:1
            # stages (by sh[0:2], then 4 * sh[2:4]; one LUT per bit each) and the zero
            # for shifts >= 16 is applied in the final select, which leaves fewer LUTs
            # than the 16:1 mux per bit above.
            sig = Cat(mant, C(1, 1))
            st1 = Signal(16, attrs={"keep": 1})     # sig >> sh[0:2], bits 8..23
            for i in range(16):
                c = [sig[8 + i + n] if 8 + i + n < 24 else C(0, 1) for n in range(4)]
                m.d.comb += st1[i].eq(Mux(sh[1], Mux(sh[0], c[3], c[2]),
                                          Mux(sh[0], c[1], c[0])))
            q = Signal(15)          # sig >> sh[0:4], bits 8..22
            for i in range(15):
                c = [st1[i + 4 * n] if i + 4 * n < 16 else C(0, 1) for n in range(4)]
                m.d.comb += q[i].eq(Mux(sh[3], Mux(sh[2], c[3], c[2]),
                                        Mux(sh[2], c[1], c[0])))
            z = Signal()            # shift >= 16: no magnitude bits
            m.d.comb += z.eq(sh[4:7] != 0)
            qb = Signal(15)
            m.d.comb += qb.eq(Mux(z, 0, q))
            q7b = Signal(7)
            m.d.comb += q7b.eq(Mux(self.v2, _q7_v2(m, Cat(mant, C(1, 1)), d8), qb[8:15]))
            m.d.comb += bits.eq(Cat(
                Mux(raw, f[0:8], Mux(ge_m, qb[0:8], Cat(q7b, s))),
                Mux(raw, f[8:16], Cat(qb[8:15], s)),
                f[16:32]))

        decoded = decoded_value(m, f, tag, v2=self.v2, k=self.k)

        m.d.comb += [
            self.tag.eq(tag),
            self.width.eq(width),
            self.bits.eq(bits),
            self.decoded.eq(decoded),
        ]
        return m
