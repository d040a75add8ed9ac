"""The companion papers' compressors (golden.compressors) on a torch.distributed process
group: one step of a method's collective between real processes.

`step(comp, grad, state)` returns the SUM over ranks (identical on every rank), the new
state and the bytes this rank's payloads took. By collective:
- prelude "max" (TernGrad's shared scalers): all_reduce(MAX) of the small array;
  "leader" (ScaleCom's indices): broadcast from the step's leader.
- allgather (top-k, random-k with own seeds, TernGrad): all_gather of the exact payload
  bytes; every rank decodes them and adds them in rank order.
- gtopk_tree (gTop-k): the gTopKAllReduce tree itself, log2 P rounds of point-to-point
  messages of k (index, value) pairs, then the result down the same tree.
- allreduce and ring_inc (values summed element-wise: random-k with a shared seed,
  ScaleCom, none, INCEPTIONN's codecs, truncation): the selected values around the real
  ring (`Ring`, wire "software", the method's codec on every hop), the same schedule as
  golden.compressors.collectives.ring_allreduce, so the numbers and the bytes are the
  simulated ring's. Pass the ring as `ring=`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch
import torch.distributed as dist

from ...golden.compressors.base import scatter
from ...golden.compressors.gtopk import merge

__all__ = ["step", "prelude"]


def prelude(comp, grad, state, group=None):
    """The method's prelude over the process group: TernGrad's shared scalers
    (all_reduce MAX), ScaleCom's leader indices (broadcast)."""
    return _prelude(comp, grad, state, group)


def _prelude(comp, grad, state, group):
    if comp.prelude_op == "max":
        t = torch.from_numpy(np.ascontiguousarray(comp.prelude(grad, state), np.float32))
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
        return t.numpy()
    if comp.prelude_op == "leader":
        lead = state.step % state.world
        arr = comp.prelude(grad, state) if state.rank == lead else None
        n = torch.tensor([0 if arr is None else arr.size], dtype=torch.int64)
        dist.broadcast(n, src=lead, group=group)
        t = torch.from_numpy(np.asarray(arr, np.int64)) if arr is not None else \
            torch.empty(int(n.item()), dtype=torch.int64)
        dist.broadcast(t, src=lead, group=group)
        return t.numpy()
    raise ValueError(f"unknown prelude {comp.prelude_op!r}")


def _gtopk(comp, payload, d, rank, world, group):
    idx, vals = comp.parse(payload)
    k = comp.count(d)
    cur = (idx.astype(np.int64), vals.astype(np.float32))
    sent = payload.nbytes
    step = 1
    while step < world:                      # up the tree to rank 0
        if rank % (2 * step) == step:
            _send_pairs(cur, rank - step, group)
            sent += 8 * cur[0].size
            break
        if rank % (2 * step) == 0 and rank + step < world:
            cur = merge(cur, _recv_pairs(rank + step, group), k)
        step *= 2
    # Down the same tree: a rank receives from its parent, then serves its children.
    top = 1
    while top < world:
        top *= 2
    step = top
    have = rank == 0
    while step > 1:
        step //= 2
        if have and rank % (2 * step) == 0 and rank + step < world:
            _send_pairs(cur, rank + step, group)
            sent += 8 * cur[0].size
        elif not have and rank % (2 * step) == step:
            cur, have = _recv_pairs(rank - step, group), True
    return cur, sent


def _send_pairs(pairs, dst, group):
    dist.send(torch.tensor([pairs[0].size], dtype=torch.int64), dst, group=group)
    if pairs[0].size:
        dist.send(torch.from_numpy(np.ascontiguousarray(pairs[0])), dst, group=group)
        dist.send(torch.from_numpy(np.ascontiguousarray(pairs[1])), dst, group=group)


def _recv_pairs(src, group):
    n = torch.empty(1, dtype=torch.int64)
    dist.recv(n, src, group=group)
    idx = torch.empty(int(n.item()), dtype=torch.int64)
    vals = torch.empty(int(n.item()), dtype=torch.float32)
    if idx.numel():
        dist.recv(idx, src, group=group)
        dist.recv(vals, src, group=group)
    return idx.numpy(), vals.numpy()


def step(comp, grad: np.ndarray, state, group=None, ring=None):
    """One step of `comp` on this rank: (sum over ranks, new state, bytes sent). Methods
    summed element-wise need `ring`: a Ring of the same ranks carrying comp.codec."""
    rank, world = state.rank, state.world
    if (dist.get_rank(group), dist.get_world_size(group)) != (rank, world):
        raise ValueError(f"state is rank {rank} of {world}, the process group says "
                         f"{dist.get_rank(group)} of {dist.get_world_size(group)}")
    if comp.collective == "gtopk_tree" and world & (world - 1):
        raise ValueError(f"gTop-k's tree needs a power-of-two number of ranks, got {world}")
    d = grad.size
    if comp.prelude_op is not None:
        state = replace(state, shared=_prelude(comp, grad, state, group))
    info = None
    if comp.collective in ("allreduce", "ring_inc"):
        if ring is None or (ring.rank, ring.world) != (rank, world):
            raise ValueError(f"method {comp.name!r} sums its values around a ring: pass the "
                             f"Ring of these ranks as ring=")
        if ring.wire != "software" or ring.codec.name != comp.codec.name:
            raise ValueError("the ring must be on the software wire with the method's codec "
                             "(Ring(..., wire='software', codec=comp.codec))")
        vals, state = comp.select(grad, state)
        vals = np.ascontiguousarray(vals, np.float32).copy()
        before = ring.payload_bytes
        ring.allreduce(vals)
        result, sent = comp.expand(vals, d, state), ring.payload_bytes - before
    else:
        payload, state = comp.compress(grad, state)
        if comp.collective == "allgather":
            every = [None] * world
            dist.all_gather_object(every, payload, group=group)
            result = np.zeros(d, np.float32)
            for pl in every:                               # rank order, on every rank
                result = result + comp.decompress(pl, d, state)
            sent = payload.nbytes * (world - 1)            # a ring all-gather's share
        else:
            (idx, vals), sent = _gtopk(comp, payload, d, rank, world, group)
            result, info = scatter(idx, vals, d), idx
    return result, comp.finish(state, info), sent
