"""Every collective of drivers.collectives.compressors, written once, per rank, over a transport.

GRACE's split: a compressor (compressors/), its memory (memory.py: the rank's
residuals, compensated here before the step and updated after it), and the communicator
here. A collective is one rank's program: a generator that sends with
`t.send(peer, data)` and receives with `data = yield peer`, so the same code runs in one
process (`play`: the P programs interleaved by a deterministic scheduler, no threads,
behind collectives.run and the study), and between processes on a blocking transport
(`drive`: torch.distributed point-to-point, transports/torch_p2p.py; the project's
sockets, transports/socket_p2p.py). The ring's program plays Algorithm 1's schedule
(ring_schedule.py), the one every ring transport plays.
Nothing here imports torch or opens a socket.

A Transport is `rank`, `world`, `send(peer, data: bytes)`, `recv(peer) -> bytes` (whole
messages, in order per pair of ranks) and the counters `sent` and `received`: message
bytes only, no framing, so they are the exact wire bytes the study reports. send must
not wait for the peer's recv (the schedules send first). A transport only moves bytes:
the communicator picks the ring an element-wise sum goes around (`ring_sum`): the
schedule's hops over the transport, or a socket Ring of the same ranks handed to
`exchange` (pipelined, its own links), never the other way round.

Every rank ends bit-identical: sums follow one fixed order (block b summed along ranks
b, b+1, ..., b-1; all-gathered payloads added in rank order) and a rank keeps what it
sends as the others decode it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Protocol

import numpy as np

from .compressors.base import Payload, as_grad, scatter
from .compressors.gtopk import merge
from .ring_schedule import block_bounds, ring_plan, ring_steps, run_ring

__all__ = ["Transport", "InProcess", "play", "drive", "step", "exchange", "block_bounds",
           "ring_plan", "ring_steps", "run_ring", "ring_allreduce", "ring_sum", "allgather", "gtopk_tree",
           "prelude", "prelude_max", "prelude_leader"]


class Transport(Protocol):
    rank: int
    world: int
    sent: int
    received: int

    def send(self, peer: int, data: bytes) -> None: ...

    def recv(self, peer: int) -> bytes: ...


# ---------------------------------------------------------------------- the ring


def ring_allreduce(t: Transport, x: np.ndarray, codec, chunk: int | None = None):
    """(Program) Sum float32 x in place over the ranks around the ring, every hop coded
    with `codec` (encode(values) -> bytes, decode(bytes, n) -> float32)."""
    if t.world == 1:
        return x
    nxt, prev = (t.rank + 1) % t.world, (t.rank - 1) % t.world
    for op, view, flag in ring_steps(x, ring_plan(x.size, t.world, t.rank, chunk)):
        if op == "send":
            data = codec.encode(view)
            if flag:
                view[:] = codec.decode(data, view.size)
            t.send(nxt, data)
            continue
        got = codec.decode((yield prev), view.size)
        if flag:
            np.add(got, view, out=view)
        else:
            view[:] = got
    return x


def ring_sum(t: Transport, x: np.ndarray, codec, ring=None):
    """(Program) Sum float32 x in place, every hop coded with `codec`: around `ring` (a
    socket Ring of t's ranks on the software wire carrying the same codec: it blocks,
    pipelined on its own links) when one is given, else the schedule's hops over t."""
    if ring is None:
        return (yield from ring_allreduce(t, x, codec))
    if (ring.rank, ring.world) != (t.rank, t.world):
        raise ValueError(f"the ring is rank {ring.rank} of {ring.world}, the transport "
                         f"{t.rank} of {t.world}")
    if ring.wire != "software" or ring.codec.name != getattr(codec, "name", None):
        raise ValueError("the ring must be on the software wire with the method's codec "
                         "(Ring(..., wire='software', codec=comp.codec))")
    return ring.allreduce(x)


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
        got = []
        for _ in parts:
            got.append((yield (r - 1) % p))
        out[(r - s - 1) % p] = tuple(got)
    return out


def prelude_max(t: Transport, arr) -> np.ndarray:
    """Element-wise max of every rank's float32 array (TernGrad's shared scalers)."""
    arr = np.ascontiguousarray(arr, "<f4")
    every = yield from allgather(t, (arr.tobytes(),))
    return np.maximum.reduce([np.frombuffer(b, "<f4").astype(np.float32) for (b,) in every])


def prelude_leader(t: Transport, lead: int, make) -> np.ndarray:
    """The leader's int32 indices (`make()`, called on the leader only) down the chain
    leader -> leader + 1 -> ... -> leader - 1 (ScaleCom's CLT-k)."""
    p, r = t.world, t.rank
    if r == lead:
        data = np.ascontiguousarray(make(), "<i4").tobytes()
    else:
        data = yield (r - 1) % p
    if (r + 1) % p != lead:
        t.send((r + 1) % p, data)
    return np.frombuffer(data, "<i4").astype(np.int64)


def prelude(comp, grad, state, t: Transport) -> np.ndarray:
    """The method's prelude: "max" or "leader" (the step's leader, step mod P)."""
    if comp.prelude_op == "max":
        return (yield from prelude_max(t, comp.prelude(grad, state)))
    if comp.prelude_op == "leader":
        return (yield from prelude_leader(t, state.step % t.world,
                                          lambda: comp.prelude(grad, state)))
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
        index = yield peer
        return comp.parse(Payload(values=(yield peer), index=index))

    step, merged = 1, False
    while step < p:                          # up: r mod 2^(j+1) = 2^j sends to r - 2^j
        if r % (2 * step) == step:
            send(r - step, pack(cur) if merged else payload)
            break
        cur, merged = merge(cur, (yield from recv(r + step)), k), True
        step *= 2
    down = None
    step = p
    while step > 1:                          # down: a rank hears its parent, serves children
        step //= 2
        if r % (2 * step) == step:
            cur = yield from recv(r - step)
        elif r % (2 * step) == 0:
            down = down or pack(cur)
            send(r + step, down)
    return cur


# ---------------------------------------------------------------------- one step


def step(comp, grad, state, t: Transport, ring=None):
    """One step of `comp` on this rank over a blocking transport: (the SUM over ranks,
    float32, identical on every rank; the new state). The element-wise sums go around
    `ring` when one is given (ring_sum)."""
    return drive(exchange(comp, grad, state, t, ring), t)


def exchange(comp, grad, state, t: Transport, ring=None):
    """(Program) One step of `comp` on this rank; returns (sum, new state). The one
    dispatch on comp.collective for every transport; `ring`: see ring_sum."""
    grad = as_grad(grad)
    d = grad.size
    if (state.rank, state.world) != (t.rank, t.world):
        raise ValueError(f"state is rank {state.rank} of {state.world}, the transport "
                         f"{t.rank} of {t.world}")
    if comp.collective == "gtopk_tree" and t.world & (t.world - 1):
        raise ValueError(f"gTop-k's tree needs a power-of-two number of workers, got {t.world}")
    # Error feedback (GRACE's compensate -> compress -> update): the method works on
    # x = gradient + residual and says afterwards what it kept back.
    if comp.feedback:
        grad = state.compensate(grad)
    if comp.prelude_op is not None:
        state = replace(state, shared=(yield from prelude(comp, grad, state, t)))
    info = None
    if comp.collective in ("allreduce", "ring_inc"):
        vals, state = comp.select(grad, state)
        vals = np.array(vals, np.float32)    # a copy: the ring sums in place
        yield from ring_sum(t, vals, comp.codec, ring)
        result = comp.expand(vals, d, state)
    elif comp.collective == "allgather":
        payload, state = comp.compress(grad, state)
        result = np.zeros(d, np.float32)
        every = yield from allgather(t, (payload.values, payload.index, payload.scale))
        for values, index, scale in every:
            result = result + comp.decompress(Payload(values, index, scale), d, state)
    elif comp.collective == "gtopk_tree":
        payload, state = comp.compress(grad, state)
        idx, vals = yield from gtopk_tree(t, comp, payload, comp.count(d))
        result, info = scatter(idx, vals, d), idx
    else:
        raise ValueError(f"unknown collective {comp.collective!r}")
    if comp.feedback and state.memory is not None:
        state.memory.update(state.layout, comp.residual(grad, state, info))
    return result, comp.finish(state, info)


# ---------------------------------------------------------------------- running programs


def drive(program, t: Transport):
    """Run one rank's program on a blocking transport; its return value."""
    try:
        peer = next(program)
        while True:
            peer = program.send(t.recv(peer))
    except StopIteration as done:
        return done.value


class InProcess:
    """Rank `rank` of a simulated world: unbounded mailboxes, one per ordered pair."""

    def __init__(self, rank, world, boxes):
        self.rank, self.world, self.boxes = rank, world, boxes
        self.sent = self.received = 0

    def send(self, peer, data):
        self.sent += len(data)
        self.boxes[(self.rank, peer)].append(bytes(data))

    def recv(self, peer):
        raise RuntimeError("an in-process rank receives through play(), not recv()")


def play(program, world: int) -> tuple[list, list]:
    """Run program(transport) for ranks 0..world-1 in one thread: each rank runs until it
    waits for a message that has not been sent yet, then the next rank that can go does
    (always the lowest), so a run is deterministic. (their results, their transports)."""
    boxes = {(a, b): deque() for a in range(world) for b in range(world)}
    ts = [InProcess(r, world, boxes) for r in range(world)]
    progs = [program(t) for t in ts]
    out, waits, live = [None] * world, [None] * world, set(range(world))

    def advance(r, data):
        try:
            waits[r] = progs[r].send(data)
        except StopIteration as done:
            out[r] = done.value
            live.discard(r)

    for r in range(world):
        advance(r, None)
    while live:
        moved = False
        for r in sorted(live):
            while r in live and boxes[(waits[r], r)]:
                data = boxes[(waits[r], r)].popleft()
                ts[r].received += len(data)
                advance(r, data)
                moved = True
        if not moved:
            raise RuntimeError(f"ranks {sorted(live)} wait for messages nobody sends: "
                               f"{ {r: waits[r] for r in sorted(live)} }")
    return out, ts
