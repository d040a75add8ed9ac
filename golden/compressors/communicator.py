"""Every collective of golden.compressors, written once, per rank, over a transport.

GRACE's split: a compressor (golden.compressors), its memory (the State), and the
communicator here. A collective is a function one rank runs; it talks to the others only
through a `Transport`, so the same code runs in one process (`InProcess`, the
simulation behind collectives.run and the study), between processes over
torch.distributed point-to-point (drivers/collectives/torch_p2p.py), and, for the ring,
on sockets (drivers/collectives/ring.py runs `ring_plan` through `run_ring` with its own
pipelined hops). Nothing here imports torch or opens a socket.

A Transport is `rank`, `world`, `send(peer, data: bytes)`, `recv(peer) -> bytes` (whole
messages, in order per pair of ranks) and the counters `sent` and `received`: message
bytes only, no framing, so they are the exact wire bytes the study reports. send must
not wait for the peer's recv (the schedules below send before they receive). A
transport may carry its own `ring_allreduce(x, codec)` (the socket ring); `step` uses
it for the element-wise methods instead of the generic hops.

Every rank ends bit-identical: sums follow one fixed order (block b summed along ranks
b, b+1, ..., b-1; all-gathered payloads added in rank order) and a rank keeps what it
sends as the others decode it.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import replace
from typing import Protocol

import numpy as np

from .base import Payload, as_grad, scatter
from .gtopk import merge

__all__ = ["Transport", "InProcess", "play", "step", "block_bounds", "ring_plan", "run_ring",
           "ring_allreduce", "allgather", "gtopk_tree", "prelude", "prelude_max",
           "prelude_leader"]


class Transport(Protocol):
    rank: int
    world: int
    sent: int
    received: int

    def send(self, peer: int, data: bytes) -> None: ...

    def recv(self, peer: int) -> bytes: ...


# ---------------------------------------------------------------------- the ring


def block_bounds(n: int, p: int) -> list[tuple[int, int]]:
    """P contiguous blocks of n values, the first n % p one value longer."""
    base, extra = divmod(n, p)
    out, lo = [], 0
    for b in range(p):
        hi = lo + base + (1 if b < extra else 0)
        out.append((lo, hi))
        lo = hi
    return out


def ring_plan(n: int, p: int, r: int, chunk: int | None = None):
    """Rank r's part of Algorithm 1 on n values: (first, reduce, gather), lists of chunks
    (c0, c1) in the order they cross the wire; reduce's carry `last` (the owner keeps
    what it sends next), gather's `forward`. Reduce-scatter step s: receive block
    r - s - 1, add, send it on; rank r ends owning block r + 1. All-gather step s:
    receive the final block r - s, forward it unless the next rank owns it.
    chunk=None: one chunk per block, empty blocks included (the simulation sends them);
    else chunks of at most `chunk` values, none empty (the sockets skip them)."""
    bounds = block_bounds(n, p)

    def cut(b):
        lo, hi = bounds[b]
        if chunk is None:
            return [(lo, hi)]
        return [(c0, min(c0 + chunk, hi)) for c0 in range(lo, hi, chunk)]

    first = cut(r)
    reduce = [(c0, c1, s == p - 2) for s in range(p - 1) for c0, c1 in cut((r - s - 1) % p)]
    gather = [(c0, c1, s < p - 2) for s in range(p - 1) for c0, c1 in cut((r - s) % p)]
    return first, reduce, gather


def run_ring(x: np.ndarray, plan, hops) -> np.ndarray:
    """Play a ring_plan on x in place through `hops`: send(view, keep) puts a chunk on the
    wire (keep: replace it by what the receiver will decode), recv(view, add) takes the
    next chunk from the previous rank and adds it to view (received + own: the fixed
    order) or stores it. The sockets' hops pipeline; these calls only fix the order."""
    first, reduce, gather = plan
    for c0, c1 in first:
        hops.send(x[c0:c1], False)
    for c0, c1, last in reduce:
        hops.recv(x[c0:c1], True)
        hops.send(x[c0:c1], last)
    for c0, c1, forward in gather:
        hops.recv(x[c0:c1], False)
        if forward:   # re-coded, as a NIC codes what its host sends
            hops.send(x[c0:c1], False)
    return x


class _Hops:
    """A ring hop over a Transport: the codec's bytes, one message per chunk."""

    def __init__(self, t, codec):
        self.t, self.codec = t, codec
        self.next, self.prev = (t.rank + 1) % t.world, (t.rank - 1) % t.world

    def send(self, view, keep):
        data = self.codec.encode(view)
        if keep:
            view[:] = self.codec.decode(data, view.size)
        self.t.send(self.next, data)

    def recv(self, view, add):
        got = self.codec.decode(self.t.recv(self.prev), view.size)
        if add:
            np.add(got, view, out=view)
        else:
            view[:] = got


def ring_allreduce(t: Transport, x: np.ndarray, codec, chunk: int | None = None):
    """Sum float32 x (in place) over the ranks around the ring, every hop coded."""
    if t.world > 1:
        run_ring(x, ring_plan(x.size, t.world, t.rank, chunk), _Hops(t, codec))
    return x


# ---------------------------------------------------------------------- the others


def allgather(t: Transport, parts: tuple) -> list[tuple]:
    """Every rank's tuple of byte strings, by rank: a ring all-gather (at step s rank r
    forwards rank r - s's parts), one message per part."""
    p, r = t.world, t.rank
    out = [None] * p
    out[r] = tuple(parts)
    for s in range(p - 1):
        for part in out[(r - s) % p]:
            t.send((r + 1) % p, part)
        out[(r - s - 1) % p] = tuple(t.recv((r - 1) % p) for _ in parts)
    return out


def prelude_max(t: Transport, arr) -> np.ndarray:
    """Element-wise max of every rank's float32 array (TernGrad's shared scalers)."""
    arr = np.ascontiguousarray(arr, "<f4")
    every = allgather(t, (arr.tobytes(),))
    return np.maximum.reduce([np.frombuffer(b, "<f4").astype(np.float32) for (b,) in every])


def prelude_leader(t: Transport, lead: int, make) -> np.ndarray:
    """The leader's int32 indices (`make()`, called on the leader only) down the chain
    leader -> leader + 1 -> ... -> leader - 1 (ScaleCom's CLT-k)."""
    p, r = t.world, t.rank
    if r == lead:
        data = np.ascontiguousarray(make(), "<i4").tobytes()
    else:
        data = t.recv((r - 1) % p)
    if (r + 1) % p != lead:
        t.send((r + 1) % p, data)
    return np.frombuffer(data, "<i4").astype(np.int64)


def prelude(comp, grad, state, t: Transport) -> np.ndarray:
    """The method's prelude: "max" or "leader" (the step's leader, step mod P)."""
    if comp.prelude_op == "max":
        return prelude_max(t, comp.prelude(grad, state))
    if comp.prelude_op == "leader":
        return prelude_leader(t, state.step % t.world, lambda: comp.prelude(grad, state))
    raise ValueError(f"unknown prelude {comp.prelude_op!r}")


def gtopk_tree(t: Transport, comp, payload: Payload, k: int):
    """gTopKAllReduce (gtopk.py): up the tree to rank 0 merging top-k pairs, then the
    global set down the same tree. A leaf sends its payload; a merged set goes as int32
    indices and the method's coded values, as a payload does."""
    p, r = t.world, t.rank
    cur = comp.parse(payload)

    def pack(pairs):
        return Payload(values=comp.codec.encode(pairs[1]),
                       index=np.ascontiguousarray(pairs[0], "<i4").tobytes())

    def send(peer, pl):
        t.send(peer, pl.index)
        t.send(peer, pl.values)

    def recv(peer):
        index = t.recv(peer)
        return comp.parse(Payload(values=t.recv(peer), index=index))

    step, merged = 1, False
    while step < p:                          # up: r mod 2^(j+1) = 2^j sends to r - 2^j
        if r % (2 * step) == step:
            send(r - step, pack(cur) if merged else payload)
            break
        cur, merged = merge(cur, recv(r + step), k), True
        step *= 2
    down = None
    step = p
    while step > 1:                          # down: a rank hears its parent, serves children
        step //= 2
        if r % (2 * step) == step:
            cur = recv(r - step)
        elif r % (2 * step) == 0:
            down = down or pack(cur)
            send(r + step, down)
    return cur


# ---------------------------------------------------------------------- one step


def step(comp, grad, state, t: Transport):
    """One step of `comp` on this rank: (the SUM over ranks, float32, identical on every
    rank; the new state). The one dispatch on comp.collective for every transport."""
    grad = as_grad(grad)
    d = grad.size
    if (state.rank, state.world) != (t.rank, t.world):
        raise ValueError(f"state is rank {state.rank} of {state.world}, the transport "
                         f"{t.rank} of {t.world}")
    if comp.collective == "gtopk_tree" and t.world & (t.world - 1):
        raise ValueError(f"gTop-k's tree needs a power-of-two number of workers, got {t.world}")
    if comp.prelude_op is not None:
        state = replace(state, shared=prelude(comp, grad, state, t))
    info = None
    if comp.collective in ("allreduce", "ring_inc"):
        vals, state = comp.select(grad, state)
        vals = np.array(vals, np.float32)    # a copy: the ring sums in place
        own = getattr(t, "ring_allreduce", None)
        own(vals, comp.codec) if own is not None else ring_allreduce(t, vals, comp.codec)
        result = comp.expand(vals, d, state)
    elif comp.collective == "allgather":
        payload, state = comp.compress(grad, state)
        result = np.zeros(d, np.float32)
        for values, index, scale in allgather(t, (payload.values, payload.index, payload.scale)):
            result = result + comp.decompress(Payload(values, index, scale), d, state)
    elif comp.collective == "gtopk_tree":
        payload, state = comp.compress(grad, state)
        idx, vals = gtopk_tree(t, comp, payload, comp.count(d))
        result, info = scatter(idx, vals, d), idx
    else:
        raise ValueError(f"unknown collective {comp.collective!r}")
    return result, comp.finish(state, info)


# ---------------------------------------------------------------------- in one process


class _Abort(Exception):
    """Another rank of the simulation failed."""


class InProcess:
    """Rank `rank` of a simulated world: unbounded mailboxes, one per ordered pair."""

    def __init__(self, rank, world, boxes):
        self.rank, self.world, self.boxes = rank, world, boxes
        self.sent = self.received = 0

    def send(self, peer, data):
        self.sent += len(data)
        self.boxes[(self.rank, peer)].put(bytes(data))

    def recv(self, peer):
        data = self.boxes[(peer, self.rank)].get()
        if data is _ABORT:
            raise _Abort
        self.received += len(data)
        return data


_ABORT = object()


def play(fn, world: int) -> tuple[list, list]:
    """Run fn(transport) for ranks 0..world-1 at once, one thread each; (their results,
    their transports). The first error is raised once every rank has stopped."""
    boxes = {(a, b): queue.SimpleQueue() for a in range(world) for b in range(world)}
    ts = [InProcess(r, world, boxes) for r in range(world)]
    out, errors = [None] * world, [None] * world

    def one(r):
        try:
            out[r] = fn(ts[r])
        except BaseException as e:  # every blocked rank is released, then it is raised
            errors[r] = e
            for box in boxes.values():
                box.put(_ABORT)

    if world == 1:
        one(0)
    else:
        threads = [threading.Thread(target=one, args=(r,), daemon=True) for r in range(world)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    first = next((e for e in errors if e is not None and not isinstance(e, _Abort)), None)
    if first is not None:
        raise first
    return out, ts
