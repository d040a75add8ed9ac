"""Encode and keep in one pass: the groups of a chunk, and at the same time what its
receiver will decode (kept in place of the values, as a ring block's owner keeps it) and
the coding error (added to an error-feedback loss), optionally on values scaled by 2^-s
first (the host's scale-following bound, ScaledCodec). Not a NIC block: the host's
gradient exchange calls it (drivers/collectives/memory.py, LossRecorder).

Why: done as the codecs spell it, one chunk took about ten passes over its values (the
scaled copy, the pack, the unpack into a new array, its product by 2^s, the error, a
finiteness check, the loss, the kept copy), 178 us per 2^16 floats where the pack alone
took 25 (docs/benchmarks.md). Here every BLOCK values are scaled, packed (fast_blocks'
kernel), decoded and compared while they are in L1.

Bit for bit what the separate steps give (tests/test_fast_keep.py): the same float32
operations on the same values in the same order. The product by 2^-s and 2^s is a
float32 product (as fast_scale.times_2_to_into's where 2^s is a normal float32); the
decoded value is fast_blocks._decode_lane's; the error is values - decoded in float32, replaced by
0 where it is not finite (an inf or NaN arrives as it is: nothing to keep), and added to
the loss in float32. The pack is the host's kernel (fast_kernels.pack_blocks), compiled
in; fast_host.py keeps numba's cache of this file true to it and to fast_blocks.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .compression_block import check_codec, check_k
from .fast_blocks import BLOCK, _bits_f32, _f32_bits, _u32, dec_consts, enc_consts
from .fast_kernels import pack_blocks
from .fast import pack_room

__all__ = ["encode_keep_into", "SCALE_LIMITS"]

# The scales s whose 2^-s and 2^s are both normal float32: there the product is one
# float32 multiply, as fast_scale's. The caller codes the others the long way.
SCALE_LIMITS = (-126, 126)
_NO_MARKS = np.zeros(0, np.int64)
_NO_LOSS = np.zeros(0, np.float32)


@njit(cache=True, nogil=True, inline="always")
def _decoded(b, t, mlim, w8f, w16f, mulf, addf, d8, d16):
    """The bit pattern the value of bit pattern b decodes to: what _decode_lane gives for
    _field(b), in float32 arithmetic that LLVM vectorises (the integer form, with its
    variable shifts and its unsigned conversion, ran 3.5x slower on AVX2). Exact: in a
    coded band |x| 2^w < 2^15 and its floor are exact, so are q mul + add < 2^17 and
    its product by a power of two (dec_consts); tests/test_fast_keep.py checks it
    against the integer form on every k, both codecs and random bit patterns."""
    e = (b >> _u32(23)) & _u32(0xFF)
    b16 = e >= mlim
    q = np.floor(_bits_f32(b & _u32(0x7FFFFFFF)) * (w16f if b16 else w8f))
    num = q * mulf + addf
    dec = _f32_bits(num * (d16 if b16 else d8)) | (b & _u32(0x80000000))
    dec = dec if num != np.float32(0.0) else _u32(0)
    return b if e >= _u32(127) else (_u32(0) if e < t else dec)


@njit(cache=True, nogil=True)
def _keep_blocks(x, t, mlim, w8, mul, add, d8, d16, down, up, scaled, out, loss, keep, marks,
                 div):
    """The groups of x (float32) at the start of out; returns their byte length. loss
    (float32 of x's size, or empty) += the coding error; x = the decoded values if
    keep, divided by div (float32; 1: as they are). With scaled, the values coded are x down and the decoded ones are times up.
    marks: an empty int64 array (pack_blocks' index, unused here). Every index below is
    into a block's own slices: an index with an offset added kept LLVM from vectorising
    (its negative-index check), 10x slower."""
    n = x.size
    xs = np.empty(BLOCK, np.float32)
    rt = np.empty(BLOCK, np.float32)
    rb = rt.view(np.uint32)
    has_loss = loss.size > 0
    w8f, w16f = np.float32(2.0 ** np.int64(w8)), np.float32(2.0 ** 15)
    mulf, addf = np.float32(np.int64(mul)), np.float32(np.int64(add))
    pos = np.uint64(0)
    for b0 in range(0, n, BLOCK):
        m = min(BLOCK, n - b0)
        xv = x[b0:b0 + m]
        if scaled:
            sv = xs[:m]
            for i in range(m):
                sv[i] = xv[i] * down
        else:
            sv = xv
        sb = sv.view(np.uint32)
        pos += pack_blocks(sb, t, mlim, w8, out[pos:], marks, 0, 0, 0)
        # Each value decoded again; then compared and kept. Separate loops, each with no
        # test inside, so that each is vectorised (one loop with the three settings
        # tested per value ran 7x slower).
        for i in range(m):
            rb[i] = _decoded(sb[i], t, mlim, w8f, w16f, mulf, addf, d8, d16)
        if scaled:
            for i in range(m):
                rt[i] = rt[i] * up
        if has_loss:
            lv = loss[b0:b0 + m]
            for i in range(m):
                e = xv[i] - rt[i]
                lv[i] += e if np.isfinite(e) else np.float32(0.0)
        if keep and div == np.float32(1.0):
            for i in range(m):
                xv[i] = rt[i]
        elif keep:
            for i in range(m):
                xv[i] = rt[i] / div
    return pos


def encode_keep_into(values: np.ndarray, out: np.ndarray, k: int, codec: str = "bounded", *,
                     scale: int | None = None, loss: np.ndarray | None = None,
                     keep: bool = False, divide_by: int = 1) -> int:
    """The groups of `values` (contiguous 1-D float32) times 2^-scale (none: as they are)
    into `out` (uint8, at least fast.pack_room(values.size) bytes; the bytes past the
    groups are scratch); returns their byte length. With `loss` (float32 of the values'
    size): loss += values - what the groups decode to (times 2^scale), 0 where that is
    not finite. With `keep`: values = what the groups decode to, divided by `divide_by`
    (the float32 quotient, as a later division would give it: a ring keeping its mean).
    `scale` must lie in SCALE_LIMITS. Releases the GIL while it runs."""
    k = check_k(k, check_codec(codec))
    if not isinstance(values, np.ndarray) or values.dtype != np.float32 or values.ndim != 1 \
            or not values.flags.c_contiguous or (keep and not values.flags.writeable):
        raise ValueError("values must be a contiguous 1-D float32 array (writable to keep)")
    if not isinstance(out, np.ndarray) or out.dtype != np.uint8 or out.ndim != 1 \
            or not out.flags.c_contiguous or out.size < pack_room(values.size):
        raise ValueError(f"out must be a contiguous uint8 array of at least "
                         f"{pack_room(values.size)} bytes")
    if loss is None:
        loss = _NO_LOSS
    elif not isinstance(loss, np.ndarray) or loss.dtype != np.float32 \
            or loss.shape != values.shape or not loss.flags.c_contiguous:
        raise ValueError("loss must be a contiguous float32 array of the values' size")
    if scale is not None and not SCALE_LIMITS[0] <= scale <= SCALE_LIMITS[1]:
        raise ValueError(f"scale must be in {SCALE_LIMITS[0]}..{SCALE_LIMITS[1]}, got {scale}")
    if values.size == 0:
        return 0
    s = 0 if scale is None else int(scale)
    down, up = np.float32(2.0 ** -s), np.float32(2.0 ** s)
    if isinstance(divide_by, bool) or not isinstance(divide_by, int) or divide_by < 1:
        raise ValueError(f"divide_by must be a positive int, got {divide_by!r}")
    return int(_keep_blocks(values, *enc_consts(k, codec), *dec_consts(k, codec), down, up,
                            scale is not None, out, loss, bool(keep), _NO_MARKS,
                            np.float32(divide_by)))
