"""Top-k with error feedback, gathered from every worker (TopKAllReduce of the gTop-k
paper, Algorithm 1; Aji and Heafield; Stich et al.).

Each worker sends the k largest |memory + gradient| as k values and k int32 indices
(8k bytes) and keeps the rest as its residual (the rank's Memory, through the
communicator). With `value_k` the values go through INCEPTIONN's codec (beyond the
papers): k int32 indices plus the codec's group bytes; the residual then also keeps the
codec error, since every receiver decodes the same.
"""

from dataclasses import replace

import numpy as np

from .base import Compressor, Float32Codec, Payload, as_grad, counts, scatter, topk_indices
from .inceptionn import GoldenCodec

__all__ = ["TopK"]


class TopK(Compressor):
    collective = "allgather"
    feedback = True
    needs = ("k",)

    def __init__(self, k, value_k: int | None = None):
        self.k = k
        self.codec = Float32Codec() if value_k is None else GoldenCodec(value_k)
        self.name = "topk" if value_k is None else f"topk_inc{value_k}"

    def count(self, size: int) -> int:
        return int(counts(self.k, np.array([size]))[0])

    def compress(self, grad, state):
        x = as_grad(grad)
        idx = topk_indices(x, self.count(x.size))
        data = self.codec.encode(x[idx])
        vals = self.codec.decode(data, idx.size)   # what every receiver will see
        payload = Payload(values=data, index=idx.astype("<i4").tobytes())
        return payload, replace(state, sent=(idx, vals))

    def residual(self, x, state, info=None):
        idx, vals = state.sent
        memory = x.copy()
        memory[idx] = x[idx] - vals   # 0 when lossless; exact for the codec (Sterbenz)
        return memory

    def parse(self, payload: Payload) -> tuple[np.ndarray, np.ndarray]:
        idx = np.frombuffer(payload.index, "<i4").astype(np.int64)
        return idx, self.codec.decode(payload.values, idx.size)

    def decompress(self, payload, size, state):
        idx, vals = self.parse(payload)
        return scatter(idx, vals, size)
