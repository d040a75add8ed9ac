"""inceptionn_eb: the INCEPTIONN codec with a true error bound (not in the paper); on the
wire it is format version 2 (shim magic 0xC6, docs/wire-format.md).

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

One implementation: the codec is the golden model's bounded codec (golden.encode /
golden.decode with codec="bounded", the bytes the NIC's version 2 puts on the wire).
"""

import numpy as np

from ....golden.api import decode, encode
from ....golden.compression_block import check_k, compression_block
from ....golden.decompression_block import decompression_block
from ....golden.wire import EB_K_MAX
from .base import DenseCompressor
from .inceptionn import _same_k

__all__ = ["EB_K_MAX", "EBCodec", "inceptionn_eb"]


class EBCodec:
    """The error-bounded codec for 2^-k, k in 1..16: golden's codec "bounded"."""

    def __init__(self, k: int = 10):
        self.k = check_k(k, "bounded")
        self.fl = self.k // 2
        self.name = f"eb{self.k}"

    def fields(self, v: np.ndarray):
        """(tag, stored) per value, as the CompressionBlock gives them."""
        bits = np.ascontiguousarray(v, dtype=np.float32).view(np.uint32)
        tag, stored, _, _ = compression_block(bits, self.k, "bounded")
        return tag, stored

    def encode(self, v: np.ndarray) -> bytes:
        return encode(np.ascontiguousarray(v, dtype=np.float32).ravel(), self.k, codec="bounded")

    def decode(self, buf: bytes, n: int) -> np.ndarray:
        return decode(bytes(buf), n, self.k, codec="bounded").copy()

    def restore(self, tag: np.ndarray, f: np.ndarray) -> np.ndarray:
        """Decoded float32 values from tags and stored fields (middle of the step)."""
        return decompression_block(tag, f, self.k, "bounded").view(np.float32)


def inceptionn_eb(k: int = 10, codec=None) -> DenseCompressor:
    """Dense error-bounded INCEPTIONN on every ring hop (`codec`: as inceptionn's)."""
    return DenseCompressor(_same_k(codec, k) or EBCodec(k), f"inceptionn_eb_k{k}")
