"""INCEPTIONN (MICRO 2018, Sections IV-V): the NIC's value codec, bit-exact through the
golden model, on every hop of the paper's ring (Algorithm 1; collectives.run, the DDP
hook). A compressor like the others: its codec here, its memory the ring's loss
(memory.LossRecorder), its communicator the ring transports, which carry it on every
wire (the NIC codes it)."""

import numpy as np

from ....golden.api import decode, encode
from ....golden.compression_block import check_k
from ..codecs import DEFAULT_SHARE, ScaledCodec, WireCodec
from .base import DenseCompressor

__all__ = ["GoldenCodec", "Inceptionn", "inceptionn", "BOUNDS"]

# "absolute": |error| < 2^-k whatever the values' scale (the paper's); "scaled": each
# chunk times 2^-s first, s from its values (codecs.ScaledCodec: |error| <= 2^(s-k)).
BOUNDS = ("scaled", "absolute")


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


class Inceptionn(DenseCompressor):
    """Dense INCEPTIONN: every value through the codec, re-coded on each ring hop.

    codec: None (the golden model's bytes of the paper's codec, GoldenCodec), "paper" or
    "bounded" (the engines' codecs, as the hook's ring codes them: codecs.WireCodec), or
    another implementation of the same bytes (the study's compiled or per-frame paths),
    which must say so by its k. bound: "absolute" or "scaled" (the bounded codec only;
    share: the fraction of a chunk's values coded with bits at least)."""

    needs = ("codec",)
    wires = ("software", "nic", "emulate")
    ring_native = True

    def __init__(self, k: int = 10, codec=None, bound: str = "absolute",
                 share: float = DEFAULT_SHARE):
        if bound not in BOUNDS:
            raise ValueError(f"bound must be one of {BOUNDS}, got {bound!r}")
        if bound == "scaled":
            if codec != "bounded":
                raise ValueError("bound='scaled' takes the bounded codec (codec='bounded')")
            value_codec = ScaledCodec(k, share)
        elif isinstance(codec, str):
            value_codec = WireCodec(codec, k)
        else:
            value_codec = _same_k(codec, k) or GoldenCodec(k)
        super().__init__(value_codec, f"inceptionn_k{k}")


def inceptionn(k: int = 10, codec=None) -> DenseCompressor:
    """Dense INCEPTIONN with the absolute bound (Inceptionn)."""
    return Inceptionn(k, codec)


def _same_k(codec, k):
    if codec is not None and codec.k != k:
        raise ValueError(f"the codec is for 2^-{codec.k}, the compressor for 2^-{k}")
    return codec
