"""Random-k and block-random-k with error feedback (Eghlidi and Jaggi, 2020, Section 3).

The paper's three knobs: scope ("layer": each layer sparsified on its own; "global": the
concatenated vector), scheme (random-k: k coordinates drawn without replacement;
block-random-k: one random start and the k - 1 values after it, start uniform in
0..n-k so the block stays inside its scope), and communication (shared=True: every
worker draws the same coordinates from a shared seed, values all-reduced, 4k bytes;
shared=False: own seed per worker, all-gathered with int32 indices, or one int32
start per scope for blocks).

scale=True multiplies the kept values by n/k and keeps no memory. For random-k that is
unbiased: every coordinate is kept with probability k/n, so E[C(x)] = x. For
block-random-k it is not: a block start uniform in 0..n-k covers coordinate i with
probability c_i / (n-k+1), c_i = min(i+1, k, n-i, n-k+1) (`block_coverage`), so
E[C(x)_i] / x_i = n c_i / (k (n-k+1)): n / (n-k+1) >= 1 in the middle of a scope and
n / (k (n-k+1)) at its edges (n = 100, k = 27: 1.35 and 0.05; tests measure it). The
paper uses the plain form with error feedback (Algorithm 1): E[C(x)] = k x/n for
random-k, and k c_i x_i / (k (n-k+1)) = c_i x_i / (n-k+1) for blocks.
"""

from dataclasses import replace

import numpy as np

from .base import Payload, Reducible, as_grad, counts, scatter, scopes

__all__ = ["RandomK", "block_coverage"]


def block_coverage(n: int, k: int) -> np.ndarray:
    """P(coordinate i is in the block) for a block of k in a scope of n, start uniform in
    0..n-k: c_i / (n-k+1), c_i the number of starts whose block holds i."""
    i = np.arange(n)
    c = np.minimum.reduce([i + 1, np.full(n, k), n - i, np.full(n, n - k + 1)])
    return c / (n - k + 1)


class RandomK(Reducible):
    needs = ("k", "layers")

    def __init__(self, k, layers=None, scope: str = "layer", block: bool = False,
                 shared: bool = True, scale: bool = False):
        if scope not in ("layer", "global"):
            raise ValueError(f"scope must be 'layer' or 'global', got {scope!r}")
        self.k, self.layers, self.scope = k, layers, scope
        self.block, self.shared, self.scale = block, shared, scale
        self.feedback = not scale     # the unbiased form keeps no memory
        self.collective = "allreduce" if shared else "allgather"
        self.name = (f"{'block' if block else 'random'}k_{scope}_"
                     f"{'allreduce' if shared else 'allgather'}{'_unbiased' if scale else ''}")

    def _sizes(self, size):
        sizes = scopes(self.layers if self.scope == "layer" else None, size)
        return sizes, counts(self.k, sizes)

    def _draw(self, size, state):
        """(indices, starts of the scopes' blocks or None, per-value scale factor)."""
        sizes, ks = self._sizes(size)
        rng = state.rng(shared=self.shared)
        offs = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        if self.block:
            starts = offs + np.array([rng.integers(0, n - k + 1) for n, k in zip(sizes, ks)])
            idx = self._blocks(starts, ks)
        else:
            idx = np.concatenate([o + np.sort(rng.choice(n, k, replace=False))
                                  for o, n, k in zip(offs, sizes, ks)]).astype(np.int64)
            starts = None
        return idx, starts, np.repeat((sizes / ks).astype(np.float32), ks)

    @staticmethod
    def _blocks(starts, ks):
        return np.concatenate([s + np.arange(k) for s, k in zip(starts, ks)]).astype(np.int64)

    def nvalues(self, size, state):
        return int(self._sizes(size)[1].sum())

    def select(self, grad, state):
        x = as_grad(grad)
        idx, starts, factor = self._draw(x.size, state)
        vals = x[idx]
        if self.scale:
            return vals * factor, replace(state, sent=(idx, starts))
        return vals, replace(state, sent=(idx, starts))

    def residual(self, x, state, info=None):
        memory = x.copy()
        memory[state.sent[0]] = 0
        return memory

    def expand(self, vals, size, state):
        return scatter(self._draw(size, state)[0], vals, size)

    def compress(self, grad, state):
        if self.shared:
            return super().compress(grad, state)
        vals, state = self.select(as_grad(grad), state)
        idx, starts = state.sent
        index = (starts if self.block else idx).astype("<i4").tobytes()
        return Payload(values=self.codec.encode(vals), index=index), state

    def decompress(self, payload, size, state):
        if self.shared:
            return super().decompress(payload, size, state)
        index = np.frombuffer(payload.index, "<i4").astype(np.int64)
        idx = self._blocks(index, self._sizes(size)[1]) if self.block else index
        return scatter(idx, self.codec.decode(payload.values, idx.size), size)
