"""In-process simulation of the collectives, with exact wire bytes per rank.

`run(compressor, grads, states)` plays one step for P workers and returns every rank's
aggregate (the SUM over workers, float32; divide by P for the mean), the bytes each
rank sent and received, and the new states. Every rank ends bit-identical: sums follow
a fixed order and a rank keeps what it sent as the others receive it.

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

from dataclasses import dataclass, replace

import numpy as np

from .base import COLLECTIVES, Compressor, Payload, as_grad, scatter
from .gtopk import merge

__all__ = ["Exchange", "run", "ring_allreduce"]


@dataclass
class Exchange:
    results: list      # per rank: float32 aggregate (sum over workers)
    sent: list         # per rank: exact bytes sent
    recv: list         # per rank: exact bytes received
    states: list       # per rank: the state for the next step


def _edges(n: int, p: int) -> list:
    """Block boundaries: n values in p blocks, the first n mod p one longer."""
    return [b * (n // p) + min(b, n % p) for b in range(p + 1)]


def ring_allreduce(vecs, codec, sent, recv):
    """Sum the equal-length float32 vectors around the ring, coding every hop."""
    p, n = len(vecs), vecs[0].size
    e = _edges(n, p)
    blk = [[v[e[b]:e[b + 1]].copy() for b in range(p)] for v in vecs]

    def hop(r, b):
        data = codec.encode(blk[r][b])
        sent[r] += len(data)
        recv[(r + 1) % p] += len(data)
        return codec.decode(data, blk[r][b].size)

    for s in range(p - 1):   # reduce-scatter: rank r sends block r - s, adds in the next
        got = [hop(r, (r - s) % p) for r in range(p)]
        for r in range(p):
            b = (r - s) % p
            blk[(r + 1) % p][b] = got[r] + blk[(r + 1) % p][b]
    for s in range(p - 1):   # all-gather: rank r owns block r + 1, forwards block r + 1 - s
        got = [hop(r, (r + 1 - s) % p) for r in range(p)]
        for r in range(p):
            b = (r + 1 - s) % p
            blk[r][b] = got[r]   # the sender keeps what it sent as the others see it
            blk[(r + 1) % p][b] = got[r]
    return [np.concatenate(row) if row else np.zeros(0, np.float32) for row in blk]


def _prelude(comp, grads, states, sent, recv):
    p = len(grads)
    if comp.prelude_op == "max":
        arrs = [np.asarray(comp.prelude(g, s), np.float32) for g, s in zip(grads, states)]
        for r in range(p):   # ring all-gather: rank r forwards ranks r, r-1, ..., r-P+2
            n = 4 * sum(arrs[(r - s) % p].size for s in range(p - 1))
            sent[r] += n
            recv[(r + 1) % p] += n
        return np.maximum.reduce(arrs)
    if comp.prelude_op == "leader":
        lead = states[0].step % p
        arr = np.asarray(comp.prelude(grads[lead], states[lead]), np.int64)
        for j in range(1, p):   # chain: leader -> leader+1 -> ... -> leader-1
            sent[(lead + j - 1) % p] += 4 * arr.size
            recv[(lead + j) % p] += 4 * arr.size
        return arr
    raise ValueError(f"unknown prelude {comp.prelude_op!r}")


def _gtopk_tree(comp, payloads, k, sent, recv):
    p = len(payloads)
    cur = [comp.parse(pl) for pl in payloads]
    msg = [pl.nbytes for pl in payloads]
    step = 1
    while step < p:   # reduce to rank 0
        for r in range(step, p, 2 * step):
            sent[r] += msg[r]
            recv[r - step] += msg[r]
            # on the wire: int32 indices and float32 values, as the payload
            cur[r - step] = merge(cur[r - step], cur[r], k)
            msg[r - step] = 8 * cur[r - step][0].size
        step *= 2
    final = cur[0]
    while step > 1:   # broadcast down the same tree
        step //= 2
        for r in range(0, p, 2 * step):
            sent[r] += 8 * final[0].size
            recv[r + step] += 8 * final[0].size
    return final


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
    d = grads[0].size
    sent, recv = [0] * p, [0] * p
    states = list(states)
    if comp.prelude_op is not None:
        agreed = _prelude(comp, grads, states, sent, recv)
        states = [replace(s, shared=agreed) for s in states]
    info = None
    if comp.collective in ("allreduce", "ring_inc"):
        vals = []
        for r in range(p):
            v, states[r] = comp.select(grads[r], states[r])
            vals.append(np.asarray(v, np.float32))
        sums = ring_allreduce(vals, comp.codec, sent, recv)
        results = [comp.expand(sums[r], d, states[r]) for r in range(p)]
    else:
        payloads: list[Payload] = []
        for r in range(p):
            pl, states[r] = comp.compress(grads[r], states[r])
            payloads.append(pl)
        if comp.collective == "allgather":
            for r in range(p):
                for s in range(p - 1):
                    n = payloads[(r - s) % p].nbytes
                    sent[r] += n
                    recv[(r + 1) % p] += n
            results = []
            for r in range(p):
                acc = np.zeros(d, np.float32)
                for j in range(p):   # rank order, the same on every rank
                    acc = acc + comp.decompress(payloads[j], d, states[r])
                results.append(acc)
        else:
            idx, vals = _gtopk_tree(comp, payloads, comp.count(d), sent, recv)
            results = [scatter(idx, vals, d) for _ in range(p)]
            info = idx
    states = [comp.finish(s, info) for s in states]
    return Exchange(results, sent, recv, states)
