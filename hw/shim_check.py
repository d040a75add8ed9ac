"""ShimCheck: version 3's check word (docs/wire-format.md section 10) as gateware.

The CRC-32 (IEEE 802.3, zlib's) of the 26-byte check message is affine over GF(2) in
the message bits: crc(m) = crc(0) ^ XOR of crc(e_i) ^ crc(0) over the set bits i. So
each check bit is a constant XOR a fixed subset of the 208 message bits: a XOR tree of
at most 208 inputs, in two register stages here. The columns are computed at
elaboration from the CRC's definition (no table typed in). golden.shim_check is the
reference; tests/test_hw_shim_check.py compares the two.

TX's HeaderRewrite feeds it the header fields, |C| and the shim from registers; RX's
check stage (hw/rx/check.py) the same bytes picked from its copy of the held beats.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["ShimCheck", "MESSAGE_BYTES", "crc32_columns"]

MESSAGE_BYTES = 26
_POLY = 0xEDB88320          # the reflected CRC-32 polynomial (0x04C11DB7)


def _crc32(data):
    """Bitwise CRC-32 (init and final XOR 0xFFFFFFFF), to derive the columns."""
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (_POLY if c & 1 else 0)
    return c ^ 0xFFFFFFFF


def crc32_columns(nbytes=MESSAGE_BYTES):
    """(crc of the zero message, [crc(e_i) ^ crc(0) for message bit i]); bit i is bit
    i % 8 of byte i // 8."""
    zero = _crc32(bytes(nbytes))
    cols = []
    for i in range(8 * nbytes):
        m = bytearray(nbytes)
        m[i // 8] = 1 << (i % 8)
        cols.append(_crc32(bytes(m)) ^ zero)
    return zero, cols


class ShimCheck(wiring.Component):
    """``msg``: the check message, byte j in bits [8j+7:8j]; ``word``: its CRC-32,
    ``LATENCY`` clocks later (the integer that TX writes big-endian in shim bytes 4..7).
    One message may enter every clock.

    ``fixed``: {byte index: value} for message bytes the user knows to be constant (the
    zero byte, version 3's magic); they are folded into the constant and their ``msg``
    bits are not read, so each XOR covers only the bits that vary.

    Two register stages: each word bit's taps (up to 208) are split into parts of at
    most ``PART_TAPS``, each part's XOR registered, and the parts XORed with the
    constant into the word. The mapper handles wide XORs poorly (it shares terms between
    the 32 bits and leaves unbalanced trees): as one XOR in a single clock it mapped to 5
    levels out of context and 7 inside the engines; with parts of 6, 12 and 18 taps, 3, 3
    and 4 levels out of context, 12 taking the fewest LUTs and half the flip-flops of 6.
    """

    LATENCY = 2
    PART_TAPS = 12

    msg: In(8 * MESSAGE_BYTES)
    word: Out(32)

    def __init__(self, fixed=None):
        self.fixed = dict(fixed or {})
        for j, v in self.fixed.items():
            if not (0 <= j < MESSAGE_BYTES and 0 <= v <= 0xFF):
                self._MustUse__silence = True      # never elaborated: no unused warning
                raise ValueError(f"fixed message byte {j}={v!r} out of range")
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        zero, cols = crc32_columns()
        const = zero
        live = []
        for i in range(8 * MESSAGE_BYTES):
            j = i // 8
            if j in self.fixed:
                if self.fixed[j] >> (i % 8) & 1:
                    const ^= cols[i]
            else:
                live.append(i)
        n = self.PART_TAPS
        for b in range(32):
            taps = [self.msg[i] for i in live if cols[i] >> b & 1]
            parts = []
            for g in range(0, len(taps), n):
                part = Signal(name=f"part{b}_{g // n}")
                m.d.sync += part.eq(_xor(taps[g:g + n]))
                parts.append(part)
            m.d.sync += self.word[b].eq(_xor(parts) ^ ((const >> b) & 1))
        return m


def _xor(bits):
    x = C(0, 1)
    for t in bits:
        x = x ^ t
    return x
