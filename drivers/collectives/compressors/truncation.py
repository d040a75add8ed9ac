"""Truncation of the low bits of each float32, the baselines of INCEPTIONN's Fig. 14
(16, 22 and 24 LSBs; 24 also cuts into the exponent, as the paper notes)."""

import numpy as np

from .base import DenseCompressor

__all__ = ["TruncCodec", "truncation"]


class TruncCodec:
    """Keeps the top 32 - bits bits of each value. Wire: those bits, MSB first, value
    after value with no padding but the last byte's (ceil(n (32 - bits) / 8) bytes)."""

    def __init__(self, bits: int):
        if not 1 <= int(bits) <= 31:
            raise ValueError(f"truncated bits must be in 1..31, got {bits}")
        self.bits = int(bits)
        self.keep = 32 - self.bits
        self.name = f"t{self.bits}"

    def encode(self, v: np.ndarray) -> bytes:
        be = np.ascontiguousarray(v, dtype=np.float32).view(np.uint32).astype(">u4")
        planes = np.unpackbits(be.view(np.uint8).reshape(-1, 4), axis=1)[:, :self.keep]
        return np.packbits(planes.reshape(-1)).tobytes()

    def decode(self, buf: bytes, n: int) -> np.ndarray:
        need = -(-n * self.keep // 8)
        if len(buf) != need:
            raise ValueError(f"{n} values of {self.keep} bits need {need} bytes, got {len(buf)}")
        planes = np.zeros((n, 32), np.uint8)
        bits = np.unpackbits(np.frombuffer(buf, np.uint8))[:n * self.keep]
        planes[:, :self.keep] = bits.reshape(n, self.keep)
        return np.packbits(planes, axis=1).view(">u4").reshape(n).astype(np.uint32).view(np.float32)


def truncation(bits: int) -> DenseCompressor:
    """Dense truncation on every ring hop, as in the paper's Fig. 14 runs."""
    return DenseCompressor(TruncCodec(bits), f"trunc{int(bits)}")
