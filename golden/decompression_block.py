"""DecompressionBlock (hw/decompression_block.py; paper Algorithm 3, spec section 1), for
the paper's codec (wire version 1) and the bounded one (wire version 2)."""

import functools

import numpy as np

from .compression_block import CHUNK, as_bits, check_codec, check_k

__all__ = ["decompression_block", "decode_into", "decode_table", "DEC16", "DEC_BASE", "DEC_MASK",
           "DEC_RAW"]


# The paper's 16-bit field {s, q15} -> float32; an 8-bit field {s, q7} decodes as the
# 16-bit field {s, q7 << 8} (q7 * 2^-7 == (q7 << 8) * 2^-15).
def _build_dec16():
    x = np.arange(1 << 16, dtype=np.uint32)
    q = x & np.uint32(0x7FFF)
    # q * 2^-15 is exact in float32 (q < 2^15); +0.0 for q = 0 whatever the sign.
    mag = (q.astype(np.float32) * np.float32(2.0 ** -15)).view(np.uint32)
    return np.where(q != 0, mag | ((x >> np.uint32(15)) << np.uint32(31)), np.uint32(0)).astype(np.uint32)


DEC16 = _build_dec16()  # 16-bit field {s, q15} -> float32 bit pattern


# Per tag: the table row a field starts at and the mask of its bits. The table holds
# the 16-bit fields {s, q15} at rows 0..65535, the 8-bit fields {s, q7} at rows
# 65536..65791 and +0.0 at row 65792 (tags 00 and 11); a raw mask lets a tag-11 value
# through unchanged. So for every codec: out = TABLE[BASE[t] + (v & MASK[t])] | (v & RAW[t]).
_ROW8, _ROW_ZERO = 1 << 16, (1 << 16) + 256
DEC_BASE = np.array([_ROW_ZERO, _ROW8, 0, _ROW_ZERO], dtype=np.uint32)
DEC_MASK = np.array([0, 0xFF, 0xFFFF, 0], dtype=np.uint32)
DEC_RAW = np.array([0, 0, 0, 0xFFFFFFFF], dtype=np.uint32)


def _signed(mag_bits, sign):
    return mag_bits | (sign.astype(np.uint32) << np.uint32(31))


@functools.lru_cache(maxsize=None)
def decode_table(k=None, codec="paper"):
    """The decoding table (uint32[65793] float32 bit patterns) of a codec; see DEC_BASE.

    paper:   {s, q15} -> (-1)^s q15 2^-15, {s, q7} -> (-1)^s q7 2^-7 (= DEC16 of q7 << 8),
             +0.0 when q = 0 (k is not needed);
    bounded: {s, q15} -> (-1)^s (2 q15 + 1) 2^-16, {s, q7} -> (-1)^s (2 q7 + 1) 2^-(fl+8)
             with fl = floor(k/2): the middle of the step, never 0 (k is needed).
    Every value is exact in float32 (at most 16 significant bits)."""
    codec = check_codec(codec)
    tab = np.zeros(_ROW_ZERO + 1, np.uint32)
    x16 = np.arange(1 << 16, dtype=np.uint32)
    x8 = np.arange(1 << 8, dtype=np.uint32)
    if codec == "paper":
        tab[:_ROW8] = DEC16
        tab[_ROW8:_ROW_ZERO] = DEC16[x8 << np.uint32(8)]
        return tab
    if k is None:
        raise ValueError("the bounded codec decodes with the k it was encoded with; give k")
    fl = check_k(k, codec) // 2
    q15, q7 = x16 & np.uint32(0x7FFF), x8 & np.uint32(0x7F)
    mag16 = ((2 * q15 + 1).astype(np.float32) * np.float32(2.0 ** -16)).view(np.uint32)
    mag8 = ((2 * q7 + 1).astype(np.float32) * np.float32(2.0 ** -(fl + 8))).view(np.uint32)
    tab[:_ROW8] = _signed(mag16, x16 >> np.uint32(15))
    tab[_ROW8:_ROW_ZERO] = _signed(mag8, x8 >> np.uint32(7))
    return tab


def decode_into(tag, v, out, k=None, codec="paper"):
    """Algorithm 3 (codec "paper" or "bounded") over flat contiguous arrays (tag uint8
    0..3, v uint32) into ``out``."""
    table = decode_table(k, codec)
    n = v.size
    size = min(n, CHUNK)
    ix = np.empty(size, np.intp)
    tmp = np.empty(size, np.uint32)
    for lo in range(0, n, CHUNK):
        hi = min(lo + CHUNK, n)
        m = hi - lo
        t, vc, oc, tc = ix[:m], v[lo:hi], out[lo:hi], tmp[:m]
        t[...] = tag[lo:hi]
        DEC_MASK.take(t, out=tc, mode="clip")
        np.bitwise_and(tc, vc, out=tc)
        DEC_BASE.take(t, out=oc, mode="clip")
        np.add(tc, oc, out=tc)
        table.take(tc, out=oc, mode="clip")
        DEC_RAW.take(t, out=tc, mode="clip")
        np.bitwise_and(tc, vc, out=tc)
        np.bitwise_or(oc, tc, out=oc)


def decompression_block(tag, stored, k=None, codec="paper"):
    """Restore float32 bit patterns from tags and stored bits (Algorithm 3, spec section 1)
    with the value codec ``codec`` ("paper", the default here as in the version-1 block;
    "bounded" needs the k of the encoder).

    Bits of ``stored`` above the tag's width are ignored. Tag 00 gives +0.0; with the
    paper's codec a zero magnitude gives +0.0 whatever the sign bit.
    """
    decode_table(k, codec)  # checks codec and k first
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
    decode_into(tag, v, out, k, codec)
    return out.reshape(shape)
