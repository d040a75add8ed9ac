"""Algorithm 1's schedule (the paper's aggregator-free ring), written once: which block
rank r sends and receives at each step, what is added and what the block's owner keeps.
Every ring plays it: the communicator's program (communicator.ring_allreduce, the
simulation's code), the socket Ring (transports/socket_ring.py) and the torch ring
(transports/torch_ring.py). Pure arithmetic on value ranges: no numbers move here.

A buffer of n values is cut in P contiguous blocks (`block_bounds`). Rank r's part is
2(P - 1) steps (`ring_blocks`): in reduce-scatter step s it sends block r - s and
receives block r - s - 1, which it adds to its own (received + own: the one fixed order
of every block's sum); after it, rank r owns block r + 1. In all-gather step s it sends
block r + 1 - s (the block it owns at s = 0, keeping what it sends as its neighbours will
decode it) and receives block r - s, which it stores. A block moves in chunks.

Two views of the same steps: `ring_plan` / `ring_steps` in wire order for a transport
whose sends and receives are independent (each received chunk is added, then sent on),
and `ring_rounds` as paired (send, receive) rounds for one whose sends and receives must
be posted together (NCCL's batch_isend_irecv).
"""

from __future__ import annotations

import numpy as np

__all__ = ["block_bounds", "ring_blocks", "ring_plan", "ring_steps", "run_ring", "ring_rounds"]


def block_bounds(n: int, p: int) -> list[tuple[int, int]]:
    """P contiguous blocks of n values, the first n % p one value longer."""
    base, extra = divmod(n, p)
    out, lo = [], 0
    for b in range(p):
        hi = lo + base + (1 if b < extra else 0)
        out.append((lo, hi))
        lo = hi
    return out


def ring_blocks(p: int, r: int) -> list[tuple[int, int, bool, bool]]:
    """Rank r's 2(P - 1) steps: (block sent, block received, add, keep). add: the
    received block is summed into this rank's (reduce-scatter) rather than stored;
    keep: the sent block is this rank's final one (its owner keeps what it sends)."""
    reduce = [((r - s) % p, (r - s - 1) % p, True, False) for s in range(p - 1)]
    gather = [((r + 1 - s) % p, (r - s) % p, False, s == 0) for s in range(p - 1)]
    return reduce + gather


def _cutter(n: int, p: int, chunk: int | None):
    bounds = block_bounds(n, p)

    def cut(b):
        lo, hi = bounds[b]
        if chunk is None:
            return [(lo, hi)]
        return [(c0, min(c0 + chunk, hi)) for c0 in range(lo, hi, chunk)]
    return cut


def ring_plan(n: int, p: int, r: int, chunk: int | None = None):
    """Rank r's steps in wire order, on n values: (first, reduce, gather), lists of
    chunks (c0, c1). first: sent before anything is received; reduce: each received,
    added and sent on, with `last` (the owner keeps what it sends); gather: each received
    and stored, with `forward` (sent on unless the next rank owns it).
    chunk=None: one chunk per block, empty blocks included (the simulation sends them);
    else chunks of at most `chunk` values, none empty (the sockets skip them)."""
    cut = _cutter(n, p, chunk)
    steps = ring_blocks(p, r)
    first = cut(r)      # step 0's send (also for P = 1, which has no steps)
    # What step i receives is what step i + 1 sends: the ring's hand-on.
    reduce = [(c0, c1, i == p - 2) for i in range(p - 1) for c0, c1 in cut(steps[i][1])]
    gather = [(c0, c1, i < 2 * p - 3) for i in range(p - 1, 2 * p - 2)
              for c0, c1 in cut(steps[i][1])]
    return first, reduce, gather


def ring_rounds(n: int, p: int, r: int, chunk: int):
    """Rank r's steps as rounds (out, inc, add, keep): in each, chunk c of the step's
    sent block goes to rank r + 1 while chunk c of its received block comes from rank
    r - 1 ((lo, hi) value ranges, None where one of the two blocks has fewer chunks).
    A rank's sends meet its neighbour's receives in the same order."""
    cut = _cutter(n, p, chunk)
    rounds = []
    for send, recv, add, keep in ring_blocks(p, r):
        out, inc = cut(send), cut(recv)
        rounds += [(out[c] if c < len(out) else None, inc[c] if c < len(inc) else None,
                    add, keep) for c in range(max(len(out), len(inc)))]
    return rounds


def ring_steps(x: np.ndarray, plan):
    """The plan as the operations on x, in wire order: ("send", view, keep) puts a chunk
    on the wire (keep: the sender replaces it by what the receiver will decode);
    ("recv", view, add) takes the next chunk from the previous rank and adds it to view
    (received + own: the fixed order) or stores it. Each must be done before the next
    is asked for."""
    first, reduce, gather = plan
    for c0, c1 in first:
        yield "send", x[c0:c1], False
    for c0, c1, last in reduce:
        yield "recv", x[c0:c1], True
        yield "send", x[c0:c1], last
    for c0, c1, forward in gather:
        yield "recv", x[c0:c1], False
        if forward:   # re-coded, as a NIC codes what its host sends
            yield "send", x[c0:c1], False


def run_ring(x: np.ndarray, plan, hops) -> np.ndarray:
    """Play the plan on x in place through blocking `hops` (send(view, keep),
    recv(view, add)); the sockets' hops pipeline, this only fixes the order."""
    for op, view, flag in ring_steps(x, plan):
        (hops.send if op == "send" else hops.recv)(view, flag)
    return x
