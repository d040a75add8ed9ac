"""A chunk of the host ring's scaled frames coded, or decoded, in one compiled call. Not
a NIC block: the software wire of the host's ring (drivers/collectives/codecs.py,
ScaledCodec.encode_frames and decode_frames) calls it.

The layout is the software wire's (drivers/collectives/transports/links.py, send_frame):
per piece of the chunk, a 4-byte big-endian length, then the frame: one byte s -
SCALE_MIN, then the bounded codec's groups of the piece's values times 2^-s.

Why: coded one frame at a time, each frame of 2^16 values paid its Python between the
compiled loops: the argument checks, the span lock of the loss, the scale's wrapper, a
bytes copy, then a header and a join in the sender; on the other side a decode's checks
and scratch lookups. With four ranks on two cores, that Python also waits for the GIL
that five threads a rank share (py-spy, P = 4: about a fifth of the codec threads' busy
samples; docs/benchmarks.md). Here a chunk's frames are one call each way, with the GIL
released throughout.

Bit for bit what the frame-at-a-time path gives (tests/test_fast_frames.py): the same
functions (fast_scale's scale, fast_keep's pass, golden.fast's unpack, fast_scale's
products) on the same pieces in the same order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .fast import _unpack_fast
from .fast_keep import SCALE_LIMITS, _keep_blocks
from .fast_scale import choose_scale_bits, times_2_to_add_into, times_2_to_div_into, times_2_to_into

__all__ = ["HEADER", "encode_scaled_frames", "decode_scaled_frames", "DECODE_ERRORS"]

HEADER = 4                 # the frame's length, big-endian, before each frame
_LO, _HI = SCALE_LIMITS

# decode_scaled_frames' status, at its index: what the frame-at-a-time decode raises.
DECODE_ERRORS = ("", "a scaled frame has no scale byte", "groups run out",
                 "bytes left over after the values", "the frames end before the chunk",
                 "bytes left over after the chunk's frames")


@njit(cache=True, nogil=True)
def encode_scaled_frames(x, i0, piece, k, share, scale_min, scale_max, t, mlim, w8, mul, add,
                         d8, d16, out, pos0, loss, keep, div):
    """The frames of x's pieces (float32, one dimension; pieces of `piece` values, the
    last one shorter) from value i0 on, written into out (uint8) from byte pos0: each
    piece's s chosen (fast_scale), then coded, its loss added into `loss` (x's size, or
    empty) and, with keep, x replaced by what decodes divided by div (fast_keep's pass).
    Stops before a piece whose s lies outside fast_keep.SCALE_LIMITS (the caller codes
    it the long way). Returns (the value index reached, the byte position reached). out
    needs, per piece of m values, HEADER + 1 + fast.pack_room(m) bytes."""
    n = x.size
    has_loss = loss.size > 0
    marks = np.zeros(0, np.int64)
    i, pos = i0, pos0
    while i < n:
        m = min(piece, n - i)
        v = x[i:i + m]
        s = choose_scale_bits(v.view(np.uint32), k, share, scale_min, scale_max)
        if s < _LO or s > _HI:
            break
        down, up = np.float32(2.0 ** -s), np.float32(2.0 ** s)
        lv = loss[i:i + m] if has_loss else loss
        nb = _keep_blocks(v, t, mlim, w8, mul, add, d8, d16, down, up, True,
                          out[pos + HEADER + 1:], lv, keep, marks, div)
        length = nb + np.uint64(1)
        for b in range(HEADER):
            out[pos + b] = np.uint8((length >> np.uint64(8 * (HEADER - 1 - b))) & np.uint64(0xFF))
        out[pos + HEADER] = np.uint8(s - scale_min)
        pos += HEADER + 1 + int(nb)
        i += m
    return i, pos


@njit(cache=True, nogil=True)
def decode_scaled_frames(wire, piece, out, scratch, table, mul, add, s8, s16, scale_min, mode,
                         div):
    """The frames `wire` (uint8, the layout above) of out.size values in pieces of
    `piece`, decoded: per frame the groups unpacked into scratch (uint32, at least
    fast.unpack_room(piece) words), times 2^s, then stored into out (mode 0), added to it
    (mode 1) or stored divided by div (mode 2). Returns (status, piece index): status 0,
    or the index in DECODE_ERRORS of what is wrong with that piece's frame; the pieces
    before it are decoded, it and those after it are not touched."""
    n = out.size
    size = wire.size
    pos = 0
    i = 0
    j = 0
    while i < n:
        m = min(piece, n - i)
        if pos + HEADER > size:
            return 4, j
        length = 0
        for b in range(HEADER):
            length = (length << 8) | int(wire[pos + b])
        start = pos + HEADER
        if length < 1:
            return 1, j
        if start + length > size:
            return 4, j
        s = int(wire[start]) + scale_min
        body = wire[start + 1:start + length]
        consumed = _unpack_fast(body, m, 0, scratch, table, mul, add, s8, s16)
        if consumed > np.uint64(body.size):
            return 2, j
        if consumed != np.uint64(body.size):
            return 3, j
        y = scratch[:m].view(np.float32)
        o = out[i:i + m]
        if mode == 1:
            times_2_to_add_into(y, s, o)
        elif mode == 2:
            times_2_to_div_into(y, s, div, o)
        else:
            times_2_to_into(y, s, o)
        pos = start + length
        i += m
        j += 1
    if pos != size:
        return 5, j
    return 0, j
