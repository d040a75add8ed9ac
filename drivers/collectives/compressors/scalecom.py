"""ScaleCom (Chen et al., NeurIPS 2020): cyclic local top-k (CLT-k, Eq. 3) with the
low-pass filter on the memory (Eq. 5, Algorithm 1).

At step t the leader is worker t mod P. Before compressing, the leader broadcasts the
indices of its k largest |m + g| (k int32); every worker then sends its own m + g at
those indices, so the k values can be summed by a plain all-reduce (commutative,
Eq. 1). Memory, with g_t the CLT-k output (dense, zero off the indices):
    m <- (1 - beta) m + beta (m + grad - g_t)        (Eq. 5; beta = 1: plain error feedback)
With `value_k` the k values travel through INCEPTIONN's codec on every ring hop (beyond
the papers); the codec error is then not fed back, since a hop codes partial sums that
belong to no single worker.
"""

from dataclasses import replace

import numpy as np

from ..memory import Memory
from .base import Float32Codec, Reducible, as_grad, counts, scatter, topk_indices
from .inceptionn import GoldenCodec

__all__ = ["CLTK"]


class CLTK(Reducible):
    collective = "allreduce"
    prelude_op = "leader"
    feedback = True
    needs = ("k",)

    def __init__(self, k, beta: float = 1.0, value_k: int | None = None):
        if not 0 < beta <= 1:
            raise ValueError(f"beta must be in (0, 1], got {beta}")
        self.k, self.beta = k, float(beta)
        self.codec = Float32Codec() if value_k is None else GoldenCodec(value_k)
        self.name = "scalecom" if value_k is None else f"scalecom_inc{value_k}"

    def count(self, size: int) -> int:
        return int(counts(self.k, np.array([size]))[0])

    @staticmethod
    def leader(state) -> int:
        return state.step % state.world

    def new_memory(self):
        return Memory(beta=self.beta)       # Eq. 5's filter, in the memory's update

    def prelude(self, grad, state):
        """The leader's local top-k indices of its error-feedback gradient (m + g)."""
        x = as_grad(grad)
        return topk_indices(x, self.count(x.size))

    def select(self, grad, state):
        x = as_grad(grad)
        idx = state.shared if state.shared is not None else topk_indices(x, self.count(x.size))
        vals = x[idx]
        return vals, replace(state, shared=idx, sent=(idx, vals))

    def residual(self, x, state, info=None):
        residual = x.copy()
        residual[state.sent[0]] = 0   # m + grad - g_t, exactly
        return residual

    def nvalues(self, size, state):
        return int(state.shared.size)

    def expand(self, vals, size, state):
        return scatter(state.shared, vals, size)
