"""CompressionBlock (hw/compression_block.py; paper Algorithm 2, spec section 1).

One float32 bit pattern and the error bound 2^-k give a 2-bit tag, the stored bits
(0, 8, 16 or 32) and the value the receiver will restore, for either value codec:
"paper" (wire version 1, Algorithm 2 as written) or "bounded" (wire version 2,
inceptionn_eb: the same tags and widths, the 8-bit field scaled to its band, decoding
to the middle of the step). Everything works on whole
NumPy arrays of uint32 bit patterns; there is no per-value Python code. For speed the
work goes through small per-k lookup tables indexed by the sign and exponent, in
cache-sized chunks with in-place NumPy operations; the tables are built from the
spec's rules and tests/test_golden_speedup.py checks them against the plain formulas.
"""

import functools
import numbers

import numpy as np

from .wire import CODECS, EB_K_MAX, EB_K_MIN, K_DEFAULT, K_MAX, K_MIN

__all__ = [
    "TAG_ZERO", "TAG_8BIT", "TAG_16BIT", "TAG_RAW", "TAG_WIDTH", "K_MIN", "K_MAX", "K_DEFAULT",
    "check_k", "check_codec", "k_range", "band_limits", "as_bits", "compression_block",
    "encode_luts", "encode_into", "CHUNK", "GROUP_CHUNK",
]

# Tag values (spec section 1): 00 zero, 01 8-bit, 10 16-bit, 11 raw float.
TAG_ZERO, TAG_8BIT, TAG_16BIT, TAG_RAW = 0, 1, 2, 3
# Stored width in bytes, indexed by tag.
TAG_WIDTH = np.array([0, 1, 2, 4], dtype=np.uint8)


def check_codec(codec):
    """Return codec if it is "paper" or "bounded", else raise ValueError."""
    if not isinstance(codec, str) or codec not in CODECS:
        raise ValueError(f"codec must be one of {', '.join(map(repr, CODECS))}, got {codec!r}")
    return codec


def k_range(codec="paper"):
    """(k_min, k_max) of a codec: 1..126 for the paper's, 1..16 for the bounded one."""
    return (K_MIN, K_MAX) if check_codec(codec) == "paper" else (EB_K_MIN, EB_K_MAX)


def check_k(k, codec="paper"):
    """Return k as int if it is an integer in the codec's range (paper 1..126, bounded
    1..16), else raise ValueError."""
    lo, hi = k_range(codec)
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise ValueError(f"error-bound exponent k must be an integer in {lo}..{hi}, got {k!r}")
    k = int(k)
    if not lo <= k <= hi:
        why = "" if codec == "paper" else f" for the {codec} codec (its bound holds up to 2^-{hi})"
        raise ValueError(f"error-bound exponent k must be in {lo}..{hi}{why} "
                         f"(error bound 2^-k), got {k}")
    return k


def band_limits(k):
    """(T, M) for error bound 2^-k: e < T -> zero, T <= e < M -> 8-bit, M <= e < 127 -> 16-bit
    (the same for both codecs)."""
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

CHUNK = 1 << 15       # values per pass: keeps every temporary in the L2 cache
GROUP_CHUNK = 4096    # groups per pass of the group packer and unpacker
# Per tag, the bytes of a stored field as a little-endian uint32 of 0/1 bytes.
_KEEP_BY_TAG = np.array([0x00000000, 0x00000001, 0x00000101, 0x01010101], dtype=np.uint32)


@functools.lru_cache(maxsize=None)
def encode_luts(k, codec="paper"):
    """Per-(k, codec) tables indexed by the top 9 bits of a float (sign and exponent).

    Every result of Algorithm 2 depends on those 9 bits plus plain bit operations on
    the float, so one gather per table replaces the chains of comparisons and np.where:
      stored  = ((f & MASK) >> SHIFT) | OR      (OR holds the hidden one and the sign)
      decoded = (f & DMASK) | DOR
    paper:   DMASK clears the mantissa bits below 2^-7 or 2^-15 (truncation toward
             zero; 0 when nothing is left, so +0.0) and DOR is 0;
    bounded: the 8-bit field has the resolution 2^-w with w = fl + 7, fl = floor(k/2),
             the 16-bit field w = 15; DMASK clears below 2^-w and DOR sets the bit of
             2^-(w+1), the middle of the step (when the whole significand lies below
             2^-w, q = 0: DMASK keeps the sign and DOR is 2^-(w+1) itself).
    Returns (tag, mask, shift, or, dmask, width, keep, dor).
    """
    codec = check_codec(codec)
    t, m_lim = band_limits(check_k(k, codec))
    fl = k // 2 if codec == "bounded" else 0
    tag = np.zeros(512, np.uint8)
    mask = np.zeros(512, np.uint32)
    shift = np.zeros(512, np.uint32)
    orv = np.zeros(512, np.uint32)
    dmask = np.zeros(512, np.uint32)
    dor = np.zeros(512, np.uint32)
    for idx in range(512):
        s, e = idx >> 8, idx & 0xFF
        if e >= 127:
            tag[idx], mask[idx], dmask[idx] = TAG_RAW, 0xFFFFFFFF, 0xFFFFFFFF
        elif e < t:
            continue  # tag 00, everything 0
        else:
            b16 = e >= m_lim
            tag[idx] = TAG_16BIT if b16 else TAG_8BIT
            # Fraction bits of the field: paper 15 / 7, bounded 15 / fl + 7.
            w = 15 if b16 else 7 + fl
            # q = floor(|f| 2^w) = (hidden one | mant) >> (150 - e - w). Shifts of 24 or
            # more empty the 24-bit significand; stop at 31 (NumPy limit).
            sh = min(150 - e - w, 31)
            mask[idx], shift[idx] = 0x7FFFFF, sh
            orv[idx] = ((1 << 23) >> sh) | (s << (15 if b16 else 7))
            # Clear the mantissa bits below 2^-w; none left below exponent 127 - w - 1.
            clear = 150 - e - w
            if codec == "paper":
                dmask[idx] = (0xFFFFFFFF << clear) & 0xFFFFFFFF if clear <= 23 else 0
            elif clear <= 23:
                dmask[idx] = (0xFFFFFFFF << clear) & 0xFFFFFFFF
                dor[idx] = 1 << (clear - 1)
            else:  # k <= 16 keeps clear <= 24: q = 0 decodes to +-2^-(w+1)
                dmask[idx] = 0x80000000
                dor[idx] = (126 - w) << 23
    width = TAG_WIDTH[tag]
    keep = _KEEP_BY_TAG[tag]
    return tag, mask, shift, orv, dmask, width, keep, dor


def encode_into(f, k, tag, stored, width, decoded, keep=None, codec="paper"):
    """Algorithm 2 (codec "paper" or "bounded") over a flat contiguous uint32 array, into
    preallocated flat outputs.

    Any output may be None (not computed). ``keep`` gets, per value, a uint32 whose
    little-endian bytes are 1 for the bytes of the stored field (the packer's mask).
    Works chunk by chunk, in place, so that the temporaries stay in the cache.
    """
    luts = encode_luts(k, codec)
    lut_tag, lut_mask, lut_shift, lut_or, lut_dmask, lut_width, lut_keep, lut_dor = luts
    bounded = codec == "bounded"
    n = f.size
    size = min(n, CHUNK)
    u32 = np.empty(size, np.uint32)
    idx = np.empty(size, np.intp)
    for lo in range(0, n, CHUNK):
        hi = min(lo + CHUNK, n)
        m = hi - lo
        fc, tmp, ix = f[lo:hi], u32[:m], idx[:m]
        np.right_shift(fc, np.uint32(23), out=tmp)
        ix[...] = tmp
        if tag is not None:
            lut_tag.take(ix, out=tag[lo:hi], mode="clip")
        if width is not None:
            lut_width.take(ix, out=width[lo:hi], mode="clip")
        if keep is not None:
            lut_keep.take(ix, out=keep[lo:hi], mode="clip")
        if decoded is not None:
            dc = decoded[lo:hi]
            lut_dmask.take(ix, out=dc, mode="clip")
            np.bitwise_and(dc, fc, out=dc)
            if bounded:
                lut_dor.take(ix, out=tmp, mode="clip")
                np.bitwise_or(dc, tmp, out=dc)
        if stored is not None:
            sc = stored[lo:hi]
            lut_mask.take(ix, out=sc, mode="clip")
            np.bitwise_and(sc, fc, out=sc)
            lut_shift.take(ix, out=tmp, mode="clip")
            np.right_shift(sc, tmp, out=sc)
            lut_or.take(ix, out=tmp, mode="clip")
            np.bitwise_or(sc, tmp, out=sc)


def compression_block(bits, k, codec="paper"):
    """Compress float32 bit patterns (Algorithm 2, spec section 1) with the value codec
    ``codec`` ("paper": wire version 1, the default here as in the version-1 block;
    "bounded": wire version 2, k in 1..16).

    Returns ``(tag uint8, stored uint32, width uint8, decoded uint32)``, all shaped
    like ``bits``: ``stored`` is LSB-aligned with ``width`` bytes (0/1/2/4) valid and
    ``decoded`` is the bit pattern the receiver restores.
    """
    f = as_bits(bits)
    k = check_k(k, check_codec(codec))
    shape = f.shape
    f = np.ascontiguousarray(f).reshape(-1)
    tag = np.empty(f.size, np.uint8)
    stored = np.empty(f.size, np.uint32)
    width = np.empty(f.size, np.uint8)
    decoded = np.empty(f.size, np.uint32)
    encode_into(f, k, tag, stored, width, decoded, codec=codec)
    width = width.reshape(shape)
    return (tag.reshape(shape), stored.reshape(shape),
            width[()] if width.ndim == 0 else width, decoded.reshape(shape))
