"""Compiled loops for the host's scale-following bound (drivers/collectives/codecs.py,
ScaledCodec): the choice of a chunk's scale s from its float32 octaves and the exact
product by 2^s. Not a NIC block: the NIC codes at a fixed 2^-k; the host scales each
chunk before it and after it.

Why: written with NumPy the choice took about a dozen passes over the chunk (a binary
search of counting passes over the uint8 octaves, a max, a cast) and the product one
more, which together ran slower than golden.fast's pack and unpack of the same values
(docs/benchmarks.md). Here the choice is one pass building a histogram of the 8-bit
exponents (SUBS sub-histograms side by side, so that a run of equal octaves does not
wait on its own counter's previous store), then a walk of its 255 finite bins; the
product one vectorised pass.

Bit-exact with the NumPy definition (tests/test_fast_scale.py): no fastmath, so a
float32 product rounds as NumPy's does. Where 2^s is a normal float32 (-126 <= s <=
127) the product is v * float32(2^s); beyond, it is done in float64 (exact: a float32
times 2^s for |s| <= 300 is a normal float64) and rounded once to float32, which is
what np.ldexp on float32 gives (NaN payloads included); past |s| = 300 every nonzero
finite float32 has already rounded to 0 or overflowed to inf, so s is clamped there.
The loops release the GIL. They use no kernels of other files, so numba's on-disk cache
(keyed on this file) needs no touching when other files change.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import fast_host  # noqa: F401  (first: numba's cache of these files)

__all__ = ["octave_histogram", "scale_from_histogram", "choose_scale_bits", "times_2_to_into",
           "times_2_to_add_into", "times_2_to_div_into", "scale_down_into", "SUBS"]

SUBS = 8                  # sub-histograms, interleaved by value index (8 of int32: 20-25%
                          # faster than 4 of int64 on 2^16-value chunks, docs/benchmarks.md)
_EXP_BIAS, _EXP_NONFINITE = 127, 255
_S_CLAMP = 300            # |s| beyond which no float32 product changes (module doc)


@njit(cache=True, nogil=True)
def octave_histogram(bits):
    """Counts of the 256 biased exponents (bits 23-30) of the uint32 words `bits`; bin 255
    holds inf and NaN. The sub-histograms count in int32 (a chunk past 2^31 values is
    counted in slices of 2^30), the sum in int64."""
    hist = np.zeros(256, np.int64)
    for lo in range(0, bits.size, 1 << 30):
        _add_octaves(bits[lo:lo + (1 << 30)], hist)
    return hist


@njit(cache=True, nogil=True, inline="always")
def _add_octaves(bits, hist):
    """hist += the octave counts of bits (at most 2^31 - 1 of them)."""
    sub = np.zeros((SUBS, 256), np.int32)
    n = bits.size
    top = n - n % SUBS
    for i in range(0, top, SUBS):
        for j in range(SUBS):
            sub[j, (bits[i + j] >> 23) & 0xFF] += 1
    for i in range(top, n):
        sub[0, (bits[i] >> 23) & 0xFF] += 1
    for j in range(SUBS):
        for e in range(256):
            hist[e] += sub[j, e]


@njit(cache=True, nogil=True)
def scale_from_histogram(hist, k, share, scale_min, scale_max):
    """codecs.choose_scale's s from the octave histogram: e_m the largest octave e such that
    at least m = max(1, ceil(share * finite)) finite values have octave >= e (0 if none),
    e_max the largest finite octave present; s = e_m - 127 + k (scale_min where e_m is 0,
    the subnormals), raised to e_max - 127 - 120 and scale_min, capped at scale_max; 0 if
    no value is finite. `share` must not be NaN (the caller checks)."""
    finite = 0
    for e in range(_EXP_NONFINITE):
        finite += hist[e]
    if finite == 0:
        return 0
    want = np.ceil(share * finite)         # a float64 (math.ceil would be an int64 here)
    e_m = 0
    if want <= finite:                     # else no octave has enough: e_m stays 0
        m = int(want) if want >= 1 else 1
        acc = 0
        for e in range(_EXP_NONFINITE - 1, -1, -1):
            acc += hist[e]
            if acc >= m:
                e_m = e
                break
    e_max = 0
    for e in range(_EXP_NONFINITE - 1, -1, -1):
        if hist[e]:
            e_max = e
            break
    s = e_m - _EXP_BIAS + k if e_m > 0 else scale_min
    s = max(s, e_max - _EXP_BIAS - 120, scale_min)
    return min(s, scale_max)


@njit(cache=True, nogil=True)
def choose_scale_bits(bits, k, share, scale_min, scale_max):
    """s for the float32 values whose bits are `bits` (uint32, one dimension)."""
    return scale_from_histogram(octave_histogram(bits), k, share, scale_min, scale_max)


@njit(cache=True, nogil=True)
def times_2_to_into(v, s, out):
    """out = v 2^s in float32 (v, out: float32, one dimension, the same size; out may be
    v), rounded once as NumPy's product or ldexp (module doc)."""
    if -126 <= s <= 127:
        f = np.float32(2.0 ** s)
        for i in range(v.size):
            out[i] = v[i] * f
    else:
        d = 2.0 ** min(max(s, -_S_CLAMP), _S_CLAMP)
        for i in range(v.size):
            out[i] = np.float32(np.float64(v[i]) * d)


@njit(cache=True, nogil=True)
def times_2_to_add_into(v, s, out):
    """out = v 2^s + out in float32 (v, out: distinct float32 arrays of one dimension and
    one size): times_2_to_into's product, rounded, then the sum, rounded (a received
    chunk added to a rank's own values in one pass, as a ring's reduce-scatter adds)."""
    if -126 <= s <= 127:
        f = np.float32(2.0 ** s)
        for i in range(v.size):
            out[i] = v[i] * f + out[i]
    else:
        d = 2.0 ** min(max(s, -_S_CLAMP), _S_CLAMP)
        for i in range(v.size):
            out[i] = np.float32(np.float64(v[i]) * d) + out[i]


@njit(cache=True, nogil=True)
def times_2_to_div_into(v, s, div, out):
    """out = (v 2^s) / div in float32 (v, out: distinct float32 arrays of one dimension and
    one size; div a float32): times_2_to_into's product, rounded, then the quotient,
    rounded (a ring's final values stored as their mean)."""
    if -126 <= s <= 127:
        f = np.float32(2.0 ** s)
        for i in range(v.size):
            out[i] = (v[i] * f) / div
    else:
        d = 2.0 ** min(max(s, -_S_CLAMP), _S_CLAMP)
        for i in range(v.size):
            out[i] = np.float32(np.float64(v[i]) * d) / div


@njit(cache=True, nogil=True)
def scale_down_into(v, k, share, scale_min, scale_max, out):
    """s = choose_scale of v (float32, one dimension), out = v 2^-s; returns s."""
    s = choose_scale_bits(v.view(np.uint32), k, share, scale_min, scale_max)
    times_2_to_into(v, -s, out)
    return s
