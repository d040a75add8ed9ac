"""Random-k and block-random-k with error feedback (Eghlidi and Jaggi, 2020, Section 3).

The paper's three knobs: scope ("layer": each layer sparsified on its own; "global": the
concatenated vector), scheme (random-k: k coordinates drawn without replacement;
block-random-k: one random start and the k - 1 values after it, start uniform in
0..n-k so the block stays inside its scope), and communication (shared=True: every
worker draws the same coordinates from a shared seed, values all-reduced, 4k bytes;
shared=False: own seed per worker, all-gathered with int32 indices, or one int32
start per scope for blocks).

scale=True is the unbiased form (values times n/k, no memory): E[C(x)] = x. The paper
uses the plain form with error feedback (Algorithm 1), which is biased: E[C(x)] = k x/n.
"""

from dataclasses import replace

import numpy as np

from .base import Payload, Reducible, as_grad, counts, scatter, scopes

__all__ = ["RandomK"]


class RandomK(Reducible):
    def __init__(self, k, layers=None, scope: str = "layer", block: bool = False,
                 shared: bool = True, scale: bool = False):
        if scope not in ("layer", "global"):
            raise ValueError(f"scope must be 'layer' or 'global', got {scope!r}")
        self.k, self.layers, self.scope = k, layers, scope
        self.block, self.shared, self.scale = block, shared, scale
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
        x = state.feedback(as_grad(grad))
        idx, starts, factor = self._draw(x.size, state)
        vals = x[idx]
        if self.scale:
            return vals * factor, replace(state, memory=None, sent=(idx, starts))
        memory = x.copy()
        memory[idx] = 0
        return vals, replace(state, memory=memory, sent=(idx, starts))

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
