"""The codec's fast path: compiled loops (numba) that give byte for byte what the NumPy
model gives, for the software NIC and for users with big captures.

The NumPy model (codec.py, groups.py, payload.py) stays the readable reference; this
file only walks the same tables value by value, in one pass, without temporaries:
  encode: per value, a gather from the per-k tables of codec._encode_luts (the same
          tables the NumPy model uses), the tag into the group's tag word, the stored
          bytes straight into the output, the decoded value on the side;
  decode: per group, the tag word, then each field read and restored through the
          16-bit table of codec._DEC16.
tests/test_golden_fast.py checks every function against the model it replaces.
`FAST` is a codec for golden.tx_frame / rx_frame (`codec=golden.fast.FAST`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .codec import _DEC16, _encode_luts, check_k
from .payload import SHIM_BYTES, SHIM_MAGIC, make_shim, parse_shim

__all__ = ["pack_groups", "unpack_groups", "compress_payload", "decompress_payload",
           "compress_with_decoded", "ones_sum", "FAST", "GOLDEN", "warm_up"]


@njit(cache=True, nogil=True)
def _encode_pack(f, tag_l, mask_l, shift_l, or_l, dmask_l, out, pos, decoded, want_decoded):
    """Groups of f's values into out from byte pos on; returns the end. Branch-free per
    value: every field is written as 4 bytes and pos moves by its width, so out needs 3
    bytes of slack. All arithmetic in uint32, as the model's."""
    n = f.size
    one = np.uint32(1)
    for g0 in range(0, n, 8):
        tw_pos = pos
        pos += 2
        tw = np.uint32(0)
        for j in range(min(8, n - g0)):
            x = f[g0 + j]
            ix = x >> np.uint32(23)
            t = np.uint32(tag_l[ix])
            tw |= t << np.uint32(2 * j)
            if want_decoded:
                decoded[g0 + j] = x & dmask_l[ix]
            s = ((x & mask_l[ix]) >> shift_l[ix]) | or_l[ix]
            out[pos] = np.uint8(s & np.uint32(0xFF))
            out[pos + 1] = np.uint8((s >> np.uint32(8)) & np.uint32(0xFF))
            out[pos + 2] = np.uint8((s >> np.uint32(16)) & np.uint32(0xFF))
            out[pos + 3] = np.uint8(s >> np.uint32(24))
            pos += t + ((t >> one) & t & one)      # width 0, 1, 2, 4 for tags 0..3
        out[tw_pos] = np.uint8(tw & np.uint32(0xFF))
        out[tw_pos + 1] = np.uint8(tw >> np.uint32(8))
    return pos


@njit(cache=True, nogil=True)
def _byte(data, i):
    return np.uint32(data[i]) if i < data.size else np.uint32(0)


@njit(cache=True, nogil=True)
def _unpack(data, n, out, dec16):
    """Decode n values from the groups at the start of data (bytes past its end read as
    zeros); returns the bytes the n values' groups take."""
    pos = 0
    for g0 in range(0, n, 8):
        tw = _byte(data, pos) | (_byte(data, pos + 1) << 8)
        pos += 2
        for j in range(8):
            t = (tw >> (2 * j)) & 3
            if t == 0:
                v = np.uint32(0)
            elif t == 1:
                v = dec16[_byte(data, pos) << 8]
                pos += 1
            elif t == 2:
                v = dec16[_byte(data, pos) | (_byte(data, pos + 1) << 8)]
                pos += 2
            else:
                v = (_byte(data, pos) | (_byte(data, pos + 1) << 8) | (_byte(data, pos + 2) << 16)
                     | (_byte(data, pos + 3) << 24))
                pos += 4
            if g0 + j < n:
                out[g0 + j] = v
    return pos


@njit(cache=True, nogil=True)
def _ones_sum(data, start):
    total = np.uint64(start)
    m = data.size // 2
    for i in range(m):
        total += (np.uint64(data[2 * i]) << np.uint64(8)) | np.uint64(data[2 * i + 1])
    if data.size % 2:
        total += np.uint64(data[data.size - 1]) << np.uint64(8)
    while total > np.uint64(0xFFFF):
        total = (total & np.uint64(0xFFFF)) + (total >> np.uint64(16))
    return total


_NO_DECODED = np.zeros(0, np.uint32)


def _bits(buf):
    if isinstance(buf, np.ndarray):
        a = np.ascontiguousarray(buf).reshape(-1)
        if a.dtype != np.uint32:
            from .codec import as_bits
            a = np.ascontiguousarray(as_bits(a))
        return a
    return np.frombuffer(buf, dtype="<u4", count=len(buf) // 4)


def _encode(bits, k, decoded=None, head=b"", tail=b""):
    """head || the groups of bits || tail, as bytes; fills decoded (uint32) if given."""
    luts = _encode_luts(k)
    out = np.empty(len(head) + 2 * -(-bits.size // 8) + 4 * bits.size + len(tail) + 3, np.uint8)
    out[:len(head)] = np.frombuffer(head, np.uint8)
    want = decoded is not None
    end = _encode_pack(bits, luts[0], luts[1], luts[2], luts[3], luts[4], out, len(head),
                       decoded if want else _NO_DECODED, want)
    out[end:end + len(tail)] = np.frombuffer(tail, np.uint8)
    return out[:end + len(tail)].tobytes()


def pack_groups(bits, k):
    """golden.pack_groups, compiled."""
    bits = _bits(bits)
    k = check_k(k)
    return _encode(bits, k) if bits.size else b""


def unpack_groups(buf, n):
    """golden.unpack_groups, compiled: (bits uint32[n], consumed, ok)."""
    if n < 0:
        raise ValueError(f"value count must be >= 0, got {n}")
    data = np.frombuffer(bytes(buf) if not isinstance(buf, (bytes, bytearray, memoryview)) else buf,
                         dtype=np.uint8)
    out = np.zeros(n, np.uint32)
    consumed = int(_unpack(data, n, out, _DEC16)) if n else 0
    return out, consumed, consumed <= data.size


def compress_with_decoded(payload, k):
    """(C, D): golden.payload._compress(payload, k, True), compiled."""
    shim = make_shim(len(payload), k)
    n = len(payload) // 4
    tail = bytes(payload[4 * n:])
    if n == 0:
        return shim + tail, tail
    dec = np.empty(4 * n + len(tail), np.uint8)
    dec[4 * n:] = np.frombuffer(tail, np.uint8)
    comp = _encode(np.frombuffer(payload, "<u4", count=n), k, dec[:4 * n].view(np.uint32),
                   shim, tail)
    return comp, dec.tobytes()


def compress_payload(payload, k):
    """golden.compress_payload, compiled."""
    return compress_with_decoded(payload, k)[0]


def decompress_payload(comp):
    """golden.decompress_payload, compiled: (D, bad)."""
    comp = bytes(comp)
    length, magic, _ = parse_shim(comp)
    if magic != SHIM_MAGIC:
        raise ValueError(f"shim magic is {magic:#04x}, expected {SHIM_MAGIC:#04x}")
    n, r = length // 4, length % 4
    stream = np.frombuffer(comp, dtype=np.uint8)[SHIM_BYTES:]
    out = np.zeros(n, np.uint32)
    consumed = int(_unpack(stream, n, out, _DEC16)) if n else 0
    tail = comp[SHIM_BYTES + consumed:SHIM_BYTES + consumed + r]
    tail += bytes(r - len(tail))
    return out.tobytes() + tail, consumed + r != stream.size


def ones_sum(data, start=0):
    """golden.ones_sum, compiled."""
    return int(_ones_sum(np.frombuffer(bytes(data) if not isinstance(data, bytes) else data,
                                       dtype=np.uint8), start))


class _Codec:
    """What tx_frame / rx_frame call for the payload work and the L4 checksum."""

    def __init__(self, name, compress, decompress, csum):
        self.name, self.compress, self.decompress, self.ones_sum = name, compress, decompress, csum

    def __repr__(self):
        return f"<codec {self.name}>"


def _golden():
    from . import checksum, payload
    return _Codec("golden", lambda p, k: payload._compress(p, k, True),
                  payload.decompress_payload, checksum.ones_sum)


FAST = _Codec("fast", compress_with_decoded, decompress_payload, ones_sum)


def warm_up():
    """Compile (or load from numba's cache) every loop now, not on the first frame."""
    x = np.array([1.0, 1e-3, 1e-30, -2.0, 0.1], np.float32).tobytes() + b"\x01"
    decompress_payload(compress_with_decoded(x, 10)[0])
    unpack_groups(pack_groups(np.frombuffer(x[:20], "<u4"), 10), 5)
    ones_sum(x)
GOLDEN = _golden()
