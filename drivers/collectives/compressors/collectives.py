"""In-process simulation of the collectives, with exact wire bytes per rank.

`run(compressor, grads, states)` plays one step for P workers and returns every rank's
aggregate (the SUM over workers, float32; divide by P for the mean), the bytes each
rank sent and received, and the new states. The collectives are communicator.py's, the
same code the real processes run: the P ranks' `communicator.exchange` programs run
interleaved over in-process mailboxes (`communicator.play`), and a rank's bytes are its
transport's counters.

- ring_inc / allreduce: the ring of INCEPTIONN's Algorithm 1 (reduce-scatter then
  all-gather in P blocks, block b summed along b, b+1, ..., b-1). Every hop encodes the
  block it sends with the compressor's codec and the receiver decodes it; for
  allreduce the ring carries the values the workers share (all of them, or the k
  selected), for ring_inc the dense gradient. A hop's bytes are its encoded length.
- allgather: a ring all-gather of the payloads (rank r forwards rank r-s's payload at
  step s); every rank decodes all payloads and adds them in rank order.
- gtopk_tree: gTopKAllReduce (see gtopk.py); P must be a power of two.
A prelude (TernGrad's scalers, ScaleCom's leader indices) goes first: "max" as a ring
all-gather of float32 arrays, "leader" as a chain broadcast of int32 indices from the
leader around the ring.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import communicator
from .base import COLLECTIVES, Compressor, as_grad

__all__ = ["Exchange", "run", "ring_allreduce"]


@dataclass
class Exchange:
    results: list      # per rank: float32 aggregate (sum over workers)
    sent: list         # per rank: exact bytes sent
    recv: list         # per rank: exact bytes received
    states: list       # per rank: the state for the next step


def ring_allreduce(vecs, codec, sent, recv):
    """Sum the equal-length float32 vectors around the ring, coding every hop; adds
    every rank's bytes to sent and recv. Returns every rank's sum."""
    vecs = [np.array(v, np.float32) for v in vecs]
    out, ts = communicator.play(lambda t: communicator.ring_allreduce(t, vecs[t.rank], codec),
                                len(vecs))
    for r, t in enumerate(ts):
        sent[r] += t.sent
        recv[r] += t.received
    return out


def run(comp: Compressor, grads, states) -> Exchange:
    """One step of `comp` for P workers: grads[r] and states[r] belong to rank r."""
    p = len(grads)
    grads = [as_grad(g) for g in grads]
    if p < 1 or len(states) != p or len({g.size for g in grads}) != 1:
        raise ValueError("need P >= 1 gradients of one size and P states")
    if [s.rank for s in states] != list(range(p)) or any(s.world != p for s in states) \
            or len({s.step for s in states}) != 1:
        raise ValueError("states must be ranks 0..P-1 of a world of P at the same step")
    if comp.collective not in COLLECTIVES:
        raise ValueError(f"unknown collective {comp.collective!r}")
    if comp.collective == "gtopk_tree" and p & (p - 1):
        raise ValueError(f"gTop-k's tree needs a power-of-two number of workers, got {p}")
    out, ts = communicator.play(
        lambda t: communicator.exchange(comp, grads[t.rank], states[t.rank], t), p)
    return Exchange([o[0] for o in out], [t.sent for t in ts], [t.received for t in ts],
                    [o[1] for o in out])
