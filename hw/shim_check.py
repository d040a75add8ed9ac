"""ShimCheck: version 3's check word (docs/wire-format.md section 10) as gateware.

The CRC-32 (IEEE 802.3, zlib's) of the 26-byte check message is affine over GF(2) in
the message bits: crc(m) = crc(0) ^ XOR of crc(e_i) ^ crc(0) over the set bits i. So
each check bit is a constant XOR a fixed subset of the 208 message bits: a XOR tree of
at most 208 inputs (3 LUT6 levels), registered once here. The columns are computed at
elaboration from the CRC's definition (no table typed in). golden.shim_check is the
reference; tests/test_hw_shim_check.py compares the two.

Not yet wired into the engines: TX would feed it the header fields, |C| and the shim
when it rewrites the IP lengths; RX from its 160-byte header window in CHECK.
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
    """``msg``: the check message, byte j in bits [8j+7:8j]; ``word``: its CRC-32, one
    clock later (the integer that TX writes big-endian in shim bytes 4..7)."""

    LATENCY = 1

    msg: In(8 * MESSAGE_BYTES)
    word: Out(32)

    def elaborate(self, platform):
        m = Module()
        zero, cols = crc32_columns()
        for b in range(32):
            taps = [self.msg[i] for i in range(8 * MESSAGE_BYTES) if cols[i] >> b & 1]
            bit = (zero >> b) & 1
            x = C(bit, 1)
            for t in taps:
                x = x ^ t
            m.d.sync += self.word[b].eq(x)
        return m
