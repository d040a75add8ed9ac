"""Value codec: CompressionBlock and DecompressionBlock (paper Algorithms 2 and 3).

One float32 bit pattern and the error bound 2^-k give a 2-bit tag, the stored bits
(0, 8, 16 or 32) and the value the receiver will restore. Everything works on whole
NumPy arrays of uint32 bit patterns; there is no per-value Python code.
"""

import numbers

import numpy as np

__all__ = [
    "TAG_ZERO", "TAG_8BIT", "TAG_16BIT", "TAG_RAW", "TAG_WIDTH", "K_MIN", "K_MAX", "K_DEFAULT",
    "check_k", "band_limits", "as_bits", "compression_block", "decompression_block",
]

# Tag values (spec section 1): 00 zero, 01 8-bit, 10 16-bit, 11 raw float.
TAG_ZERO, TAG_8BIT, TAG_16BIT, TAG_RAW = 0, 1, 2, 3
# Stored width in bytes, indexed by tag.
TAG_WIDTH = np.array([0, 1, 2, 4], dtype=np.uint8)

K_MIN, K_MAX, K_DEFAULT = 1, 126, 10


def check_k(k):
    """Return k as int if it is an integer in 1..126, else raise ValueError."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise ValueError(f"error-bound exponent k must be an integer in {K_MIN}..{K_MAX}, got {k!r}")
    k = int(k)
    if not K_MIN <= k <= K_MAX:
        raise ValueError(f"error-bound exponent k must be in {K_MIN}..{K_MAX} "
                         f"(error bound 2^-k), got {k}")
    return k


def band_limits(k):
    """(T, M) for error bound 2^-k: e < T -> zero, T <= e < M -> 8-bit, M <= e < 127 -> 16-bit."""
    k = check_k(k)
    t = 127 - k
    return t, t + (k + 1) // 2


def as_bits(bits):
    """Accept a uint32 array of bit patterns (or anything castable without loss) as uint32."""
    a = np.asarray(bits)
    if a.dtype == np.uint32:
        return a
    if a.dtype.kind in "iu" and (a.size == 0 or (a.min() >= 0 and a.max() <= 0xFFFFFFFF)):
        return a.astype(np.uint32)
    raise ValueError(f"expected float32 bit patterns as uint32, got dtype {a.dtype}")


def compression_block(bits, k):
    """Compress float32 bit patterns (Algorithm 2, spec section 1).

    Returns ``(tag uint8, stored uint32, width uint8, decoded uint32)``, all shaped
    like ``bits``: ``stored`` is LSB-aligned with ``width`` bytes (0/1/2/4) valid and
    ``decoded`` is the bit pattern the receiver restores.
    """
    f = as_bits(bits)
    t, m_lim = band_limits(k)
    s = f >> np.uint32(31)
    e = (f >> np.uint32(23)) & np.uint32(0xFF)
    mant = (f & np.uint32(0x7FFFFF)) | np.uint32(1 << 23)
    # Shift amounts reach k <= 126; NumPy shifts >= 32 are undefined, and 24 already
    # empties the 24-bit significand, so clamp there.
    shift = np.minimum(np.uint32(127) - np.minimum(e, np.uint32(127)), np.uint32(24))
    fixed = mant >> shift  # |f| with 23 fraction bits, truncated
    q15 = (fixed >> np.uint32(8)) & np.uint32(0x7FFF)
    q7 = (fixed >> np.uint32(16)) & np.uint32(0x7F)

    raw = e >= 127
    zero = e < t
    b16 = ~raw & ~zero & (e >= m_lim)
    tag = np.where(raw, TAG_RAW, np.where(zero, TAG_ZERO, np.where(b16, TAG_16BIT, TAG_8BIT)))
    tag = tag.astype(np.uint8)
    stored = np.where(raw, f,
                      np.where(zero, np.uint32(0),
                               np.where(b16, (s << np.uint32(15)) | q15, (s << np.uint32(7)) | q7)))
    stored = stored.astype(np.uint32)
    width = TAG_WIDTH[tag]
    return tag, stored, width, decompression_block(tag, stored)


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
    # q * 2^-7 and q * 2^-15 are exact in float32 (q < 2^15), so float arithmetic
    # gives exactly the bit pattern Algorithm 3 builds by hand.
    q7 = (v & np.uint32(0x7F)).astype(np.float32) * np.float32(2.0 ** -7)
    s7 = (v >> np.uint32(7)) & np.uint32(1)
    q15 = (v & np.uint32(0x7FFF)).astype(np.float32) * np.float32(2.0 ** -15)
    s15 = (v >> np.uint32(15)) & np.uint32(1)
    mag = np.where(tag == TAG_8BIT, q7, q15).astype(np.float32).view(np.uint32)
    sign = np.where(tag == TAG_8BIT, s7, s15)
    # +0.0 for q = 0: only set the sign bit on a non-zero magnitude.
    fixed = np.where(mag != 0, mag | (sign << np.uint32(31)), np.uint32(0))
    out = np.where(tag == TAG_RAW, v, np.where(tag == TAG_ZERO, np.uint32(0), fixed))
    return out.astype(np.uint32)
