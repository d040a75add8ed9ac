"""DecompressionBlock (hw/decompression_block.py; paper Algorithm 3, spec section 1)."""

import numpy as np

from .compression_block import CHUNK, as_bits

__all__ = ["decompression_block", "decode_into", "DEC16"]


# Decoding goes through one 65536-entry table: an 8-bit field {s, q7} is the 16-bit
# field {s, q7 << 8} (q7 * 2^-7 == (q7 << 8) * 2^-15), so a tag picks a shift and a
# mask that bring the field to 16 bits (tags 00 and 11 to 0), and a raw mask that lets
# a tag-11 value through unchanged.
def _build_dec16():
    x = np.arange(1 << 16, dtype=np.uint32)
    q = x & np.uint32(0x7FFF)
    # q * 2^-15 is exact in float32 (q < 2^15); +0.0 for q = 0 whatever the sign.
    mag = (q.astype(np.float32) * np.float32(2.0 ** -15)).view(np.uint32)
    return np.where(q != 0, mag | ((x >> np.uint32(15)) << np.uint32(31)), np.uint32(0)).astype(np.uint32)


DEC16 = _build_dec16()  # 16-bit field {s, q15} -> float32 bit pattern
_DEC_SHIFT = np.array([0, 8, 0, 0], dtype=np.uint32)
_DEC_MASK = np.array([0, 0xFF00, 0xFFFF, 0], dtype=np.uint32)
_DEC_RAW = np.array([0, 0, 0, 0xFFFFFFFF], dtype=np.uint32)


def decode_into(tag, v, out):
    """Algorithm 3 over flat contiguous arrays (tag uint8 0..3, v uint32) into ``out``."""
    n = v.size
    size = min(n, CHUNK)
    ix = np.empty(size, np.intp)
    tmp = np.empty(size, np.uint32)
    for lo in range(0, n, CHUNK):
        hi = min(lo + CHUNK, n)
        m = hi - lo
        t, vc, oc, tc = ix[:m], v[lo:hi], out[lo:hi], tmp[:m]
        t[...] = tag[lo:hi]
        _DEC_SHIFT.take(t, out=tc, mode="clip")
        np.left_shift(vc, tc, out=tc)
        _DEC_MASK.take(t, out=oc, mode="clip")
        np.bitwise_and(tc, oc, out=tc)
        DEC16.take(tc, out=oc, mode="clip")
        _DEC_RAW.take(t, out=tc, mode="clip")
        np.bitwise_and(tc, vc, out=tc)
        np.bitwise_or(oc, tc, out=oc)


def decompression_block(tag, stored):
    """Restore float32 bit patterns from tags and stored bits (Algorithm 3, spec section 1).

    Bits of ``stored`` above the tag's width are ignored. Tag 00 and a zero magnitude
    give +0.0 whatever the sign bit.
    """
    tag = np.asarray(tag)
    if tag.dtype.kind not in "iu" or (tag.size and (tag.min() < 0 or tag.max() > 3)):
        raise ValueError("tags must be integers 0..3")
    tag = tag.astype(np.uint8)
    v = as_bits(stored)
    tag, v = np.broadcast_arrays(tag, v)
    shape = v.shape
    tag = np.ascontiguousarray(tag).reshape(-1)
    v = np.ascontiguousarray(v).reshape(-1)
    out = np.empty(v.size, np.uint32)
    decode_into(tag, v, out)
    return out.reshape(shape)
