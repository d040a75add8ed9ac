"""gTop-k (Shi et al., ICDCS 2019): global top-k through gTopKAllReduce (Algorithm 3).

Local top-k with residual as in TopK (Algorithm 4, lines 5-8). The tree: in round j
(j = 0 .. log2 P - 1) rank r with r mod 2^(j+1) = 2^j sends its k (value, index) pairs
to r - 2^j, which adds them to its own where indices meet and keeps the top k of the
union (Definition 1); rank 0 ends with the global top-k and broadcasts it down the same
tree. After the exchange a worker puts back into its residual the values it selected
that are not in the global set (Algorithm 4, line 10). P must be a power of two.
Every message is 8k bytes, so rank 0 sends and receives 8k log2 P each, against 8k (P-1)
for TopK.

As in the paper, a value dropped in an early merge whose index still makes the global
set is neither applied nor put back: the sum over the global set can miss it.
"""

import numpy as np

from .base import topk_indices
from .topk import TopK

__all__ = ["GTopK", "merge"]


def merge(a, b, k: int):
    """Definition 1: a (receiver) + b (sender) on the union of indices, then top-k."""
    idx = np.union1d(a[0], b[0])
    vals = np.zeros(idx.size, np.float32)
    vals[np.searchsorted(idx, a[0])] = a[1]
    vals[np.searchsorted(idx, b[0])] += b[1]
    keep = topk_indices(vals, k)
    return idx[keep], vals[keep]


class GTopK(TopK):
    collective = "gtopk_tree"

    def __init__(self, k):
        super().__init__(k)
        self.name = "gtopk"

    def residual(self, x, state, info=None):
        """info: the global indices; put back what this worker sent that did not make it."""
        memory = super().residual(x, state)
        idx, vals = state.sent
        back = ~np.isin(idx, info)
        memory[idx[back]] += vals[back]
        return memory
