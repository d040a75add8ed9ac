"""Random foreign DSCP-10 frames through the compiled RX (drivers/fastpath.rx_into), for
`inceptionn bench foreign`: the frames a host without a TX engine sends, made and judged
in one compiled loop so that 10^8 of them take minutes, not days.

Each frame: Ethernet II / IPv4 / TCP (even frame numbers, payload 4..1460 bytes) or UDP
(odd, 4..1472 bytes), DSCP 10, random addresses, IP ID, ports and TCP sequence number,
a uniformly random payload. Every frame goes through every receiver (a versions mask
each), and through a receiver that accepts version 3 with the frame's first four payload
bytes forced to a version-3 shim that passes every rule but the check word: that row
measures the check word alone.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..golden import DSCP_DEFAULT
from . import fastpath as fp

__all__ = ["run", "frame_at", "COLS", "V3_FORCED"]

# Per receiver: [decompressed, malformed, check_failed]
COLS = ("decompressed", "malformed", "check_failed")
V3_FORCED = -1        # a mask value naming the forced-shim row


@njit(cache=True, nogil=True, inline="always")
def _next(s):
    """splitmix64: (new state, 64 random bits)."""
    s = s + np.uint64(0x9E3779B97F4A7C15)
    z = s
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return s, z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def _fill(f, start, count, s):
    """count random bytes at f[start:]; returns the new generator state."""
    i = 0
    while i < count:
        s, z = _next(s)
        for j in range(8):
            if i + j < count:
                f[start + i + j] = np.uint8((z >> np.uint64(8 * j)) & np.uint64(0xFF))
        i += 8
    return s


@njit(cache=True, nogil=True)
def _frame(f, tcp, s, dscp):
    """A random foreign frame in f; returns (length, payload offset, new state)."""
    # Ethernet: fixed MACs (RX ignores them), EtherType IPv4.
    for j in range(12):
        f[j] = np.uint8(2 if j in (0, 6) else (2 if j == 5 else 1 if j == 11 else 0))
    f[12] = 0x08
    f[13] = 0x00
    l3 = 14
    s, z = _next(s)
    top = 1460 if tcp else 1472
    size = 4 + np.int64(z % np.uint64(top - 3))
    l4h = 20 if tcp else 8
    total = 20 + l4h + size
    f[l3] = 0x45
    f[l3 + 1] = np.uint8(dscp << 2)
    f[l3 + 2] = np.uint8(total >> 8)
    f[l3 + 3] = np.uint8(total & 0xFF)
    s = _fill(f, l3 + 4, 2, s)                   # IP ID
    f[l3 + 6] = 0x40                             # DF, not a fragment
    f[l3 + 7] = 0
    f[l3 + 8] = 64
    f[l3 + 9] = np.uint8(6 if tcp else 17)
    f[l3 + 10] = 0                               # checksums: RX does not check them
    f[l3 + 11] = 0
    s = _fill(f, l3 + 12, 8, s)                  # addresses
    l4 = l3 + 20
    s = _fill(f, l4, 4, s)                       # ports
    if tcp:
        s = _fill(f, l4 + 4, 8, s)               # sequence and ack numbers
        f[l4 + 12] = 0x50
        f[l4 + 13] = 0x18
        f[l4 + 14] = 0xFF
        f[l4 + 15] = 0xFF
        for j in range(16, 20):
            f[l4 + j] = 0
    else:
        f[l4 + 4] = np.uint8((8 + size) >> 8)
        f[l4 + 5] = np.uint8((8 + size) & 0xFF)
        f[l4 + 6] = 0
        f[l4 + 7] = 0
    p = l4 + l4h
    s = _fill(f, p, size, s)
    return p + size, p, s


@njit(cache=True, nogil=True, inline="always")
def _state(seed, i):
    """Frame i's own generator state: any frame can be made alone (frame_at) and a run
    split into parts gives the same frames."""
    return (np.uint64(seed) * np.uint64(0xD1B54A32D192ED03)) ^ (np.uint64(i) * np.uint64(0x8CB92BA72F3D8DD7))


@njit(cache=True, nogil=True)
def _one(f, seed, i, dscp):
    return _frame(f, i % 2 == 0, _state(seed, i), dscp)


@njit(cache=True, nogil=True)
def _run(seed, start, frames, dscp, masks, tabs, counts):
    f = np.zeros(fp.FRAME_ROOM + 64, np.uint8)
    out = np.zeros(fp.FRAME_ROOM + 64, np.uint8)
    cnt = np.zeros((1, len(fp.COLUMNS)), np.int64)
    for i in range(frames):
        n, p, _ = _one(f, seed, start + i, dscp)
        for r in range(masks.size):
            m = masks[r]
            if m == V3_FORCED:
                # Shim bytes 0..3 forced to a version-3 shim that passes every rule but
                # the check word: L = received + 1 (restorable: received >= 8 + 2 ceil(n/8)
                # + r holds for every received >= 12), magic 0xC7, k 1..16.
                received = n - p
                if received < 12:
                    continue
                keep0, keep1, keep2, keep3 = f[p], f[p + 1], f[p + 2], f[p + 3]
                length = received + 1
                f[p] = np.uint8(length >> 8)
                f[p + 1] = np.uint8(length & 0xFF)
                f[p + 2] = 0xC7
                f[p + 3] = np.uint8(1 + (keep3 & 15))
                cnt[:] = 0
                fp.rx_into(f, n, out, dscp, True, cnt, 0, tabs, 4)
                f[p], f[p + 1], f[p + 2], f[p + 3] = keep0, keep1, keep2, keep3
            else:
                cnt[:] = 0
                fp.rx_into(f, n, out, dscp, True, cnt, 0, tabs, m)
            counts[r, 0] += cnt[0, fp.RX0 + fp.E_DECOMP]
            counts[r, 1] += cnt[0, fp.RX0 + fp.E_MALFORMED]
            counts[r, 2] += cnt[0, fp.RX0 + fp.E_CHECK_FAILED]
            counts[r, 3] += 1


def frame_at(seed: int, i: int, dscp: int = DSCP_DEFAULT) -> bytes:
    """Frame i of the seed's sequence, as run() judges it."""
    f = np.zeros(fp.FRAME_ROOM + 64, np.uint8)
    n, _, _ = _one(f, seed, i, dscp)
    return bytes(f[:n])


def run(frames: int, seed: int, dscp: int, masks, start: int = 0) -> np.ndarray:
    """int64[len(masks), 4]: per receiver (a versions mask, or V3_FORCED) the frames it
    decompressed, flagged malformed, refused by the check word, and judged. Frames
    ``start .. start + frames - 1`` of the seed's sequence (a run can be split)."""
    masks = np.asarray(masks, np.int64)
    counts = np.zeros((masks.size, 4), np.int64)
    _run(seed, start, frames, dscp, masks, fp.tables(), counts)
    return counts
