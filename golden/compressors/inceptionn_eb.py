"""inceptionn_eb: the INCEPTIONN codec with a true error bound (not in the paper).

Same tags, same bands, same field widths and the same group layout as the paper's
codec, so every input costs exactly the same bytes. Only what a lossy field holds
changes. With fl = floor(k/2), the 8-bit band holds |f| in [2^-k, 2^-fl) and the
16-bit band |f| in [2^-fl, 1):
  - 8-bit field {s, q7}:  q7  = floor(|f| 2^(fl+7))  (the paper: floor(|f| 2^7), a fixed
    scale that reaches only 2^-7, so values below it vanish when k > 7);
  - 16-bit field {s, q15}: q15 = floor(|f| 2^15)     (as the paper);
  - decoding returns the middle of the quantization step, (2q + 1) 2^-(w+1) with
    w = fl + 7 or 15, instead of its bottom: half the error, and no bias toward zero.
Error: below 2^-k in the 0-bit band, at most 2^-(fl+8) <= 2^-(k+1) in the 8-bit band
(k <= 14) and 2^-16 in the 16-bit band; so |error| < 2^-k for k <= 14 and <= 2^-k for
k = 15, 16. Larger k is refused. The decoder must know k (the shim's byte 3 carries it).
"""

import numpy as np

from ..compression_block import TAG_16BIT, TAG_8BIT, TAG_RAW, TAG_WIDTH, check_k, compression_block
from ..tag_decoder import GROUP_VALUES, group_lengths
from .base import DenseCodec

__all__ = ["EB_K_MAX", "EBCodec", "inceptionn_eb"]

EB_K_MAX = 16
_LEN = group_lengths(np.arange(1 << 16)).tolist()   # group length per tag word
_SHIFTS = np.arange(GROUP_VALUES, dtype=np.uint32) * np.uint32(2)


def _pack(values: np.ndarray, widths: np.ndarray) -> bytes:
    """Concatenate widths[i] little-endian bytes of values[i]."""
    ends = np.cumsum(widths, dtype=np.int64)
    starts = ends - widths
    out = np.zeros(int(ends[-1]) if ends.size else 0, np.uint8)
    for lane in range(4):
        sel = widths > lane
        out[starts[sel] + lane] = (values[sel] >> np.uint32(8 * lane)) & np.uint32(0xFF)
    return out.tobytes()


class EBCodec:
    """The error-bounded codec for 2^-k, k in 1..16."""

    def __init__(self, k: int = 10):
        k = check_k(k)
        if k > EB_K_MAX:
            raise ValueError(f"inceptionn_eb bounds the error for k <= {EB_K_MAX} only, got {k}")
        self.k, self.fl = k, k // 2
        self.name = f"eb{k}"

    def fields(self, v: np.ndarray):
        """(tag, stored) per value; tags are the paper's, taken from the golden model."""
        bits = np.ascontiguousarray(v, dtype=np.float32).view(np.uint32)
        tag = compression_block(bits, self.k)[0]
        stored = np.zeros(bits.size, np.uint32)
        sign = bits >> np.uint32(31)
        mag = np.abs(v.astype(np.float32))
        for t, lsb, top in ((TAG_8BIT, self.fl + 7, 7), (TAG_16BIT, 15, 15)):
            sel = tag == t
            q = np.floor(mag[sel] * np.float32(2.0 ** lsb)).astype(np.uint32)  # exact scaling
            stored[sel] = (sign[sel] << np.uint32(top)) | q
        raw = tag == TAG_RAW
        stored[raw] = bits[raw]
        return tag, stored

    def encode(self, v: np.ndarray) -> bytes:
        tag, stored = self.fields(np.asarray(v, dtype=np.float32).ravel())
        n = tag.size
        if n == 0:
            return b""
        g = -(-n // GROUP_VALUES)
        tags = np.zeros(g * GROUP_VALUES, np.uint32)
        tags[:n] = tag
        vals = np.zeros((g, GROUP_VALUES + 1), np.uint32)
        wids = np.zeros((g, GROUP_VALUES + 1), np.int64)
        vals[:, 0] = (tags.reshape(g, GROUP_VALUES) << _SHIFTS).sum(axis=1)
        wids[:, 0] = 2
        vals.reshape(-1)[np.arange(n) + np.arange(n) // GROUP_VALUES + 1] = stored
        wids[:, 1:] = TAG_WIDTH[tags].reshape(g, GROUP_VALUES)
        return _pack(vals.reshape(-1), wids.reshape(-1))

    def decode(self, buf: bytes, n: int) -> np.ndarray:
        g = -(-n // GROUP_VALUES)
        data = bytes(buf)
        starts, pos = [], 0
        for _ in range(g):   # each group's length follows from its own tag word
            if pos + 2 > len(data):
                raise ValueError(f"groups run out: {n} values need more than {len(data)} bytes")
            starts.append(pos)
            pos += _LEN[data[pos] | data[pos + 1] << 8]
        if pos != len(data):
            raise ValueError(f"{n} values take {pos} bytes, got {len(data)}")
        ext = np.frombuffer(data + bytes(40), np.uint8)
        st = np.array(starts, np.int64)
        words = (ext[st].astype(np.uint32) | ext[st + 1].astype(np.uint32) << 8)
        tag = ((words[:, None] >> _SHIFTS) & np.uint32(3)).reshape(-1)[:n]
        width = TAG_WIDTH[tag].astype(np.int64)
        wg = np.zeros(g * GROUP_VALUES, np.int64)
        wg[:n] = width
        offs = (st[:, None] + 2 + np.cumsum(wg.reshape(g, -1), axis=1) - wg.reshape(g, -1))
        offs = offs.reshape(-1)[:n]
        f = np.zeros(n, np.uint32)
        for lane in range(4):
            f |= ext[offs + lane].astype(np.uint32) << np.uint32(8 * lane)
        return self.restore(tag, f)

    def restore(self, tag: np.ndarray, f: np.ndarray) -> np.ndarray:
        """Decoded float32 values from tags and stored fields (middle of the step)."""
        out = np.zeros(tag.size, np.float32)
        for t, lsb, top in ((TAG_8BIT, self.fl + 7, 7), (TAG_16BIT, 15, 15)):
            sel = tag == t
            q = f[sel] & np.uint32((1 << top) - 1)
            mag = (2 * q + 1).astype(np.float32) * np.float32(2.0 ** -(lsb + 1))  # exact
            out[sel] = np.where((f[sel] >> np.uint32(top)) & np.uint32(1), -mag, mag)
        raw = tag == TAG_RAW
        out.view(np.uint32)[raw] = f[raw]
        return out


def inceptionn_eb(k: int = 10) -> DenseCodec:
    """Dense error-bounded INCEPTIONN on every ring hop."""
    return DenseCodec(EBCodec(k), f"inceptionn_eb_k{k}")
