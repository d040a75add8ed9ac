"""INCEPTIONN (MICRO 2018, Sections IV-V): the NIC's value codec, bit-exact through the
golden model, on every hop of the paper's ring (Algorithm 1; collectives.run)."""

import numpy as np

from ....golden.api import decode, encode
from ....golden.compression_block import check_k
from .base import DenseCompressor

__all__ = ["GoldenCodec", "inceptionn"]


class GoldenCodec:
    """The paper's codec (Algorithms 2 and 3) with error bound 2^-k: the bytes are the
    golden model's group stream, exactly what the compression engine emits."""

    def __init__(self, k: int = 10):
        self.k = check_k(k)
        self.name = f"inc{self.k}"

    def encode(self, v: np.ndarray) -> bytes:
        return encode(np.ascontiguousarray(v, dtype=np.float32), self.k, codec="paper")

    def decode(self, buf: bytes, n: int) -> np.ndarray:
        return decode(buf, n, self.k, codec="paper").copy()


def inceptionn(k: int = 10, codec=None) -> DenseCompressor:
    """Dense INCEPTIONN: every value through the codec, re-coded on each ring hop.
    `codec`: another implementation of the same bytes (the study's compiled or per-frame
    paths), which must say so by its k; default the golden model's."""
    return DenseCompressor(_same_k(codec, k) or GoldenCodec(k), f"inceptionn_k{k}")


def _same_k(codec, k):
    if codec is not None and codec.k != k:
        raise ValueError(f"the codec is for 2^-{codec.k}, the compressor for 2^-{k}")
    return codec
