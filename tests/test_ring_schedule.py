"""Algorithm 1's schedule (drivers/collectives/ring_schedule.py), which every ring plays:
its two views (wire order, paired rounds) agree, every rank's sends meet its
neighbour's receives, and playing it sums every block in the one fixed order."""

import itertools

import numpy as np
import pytest

from inceptionn.drivers.collectives.ring_schedule import (block_bounds, ring_plan,
                                                          ring_rounds, ring_steps)

# P = 1 exchanges nothing (every ring returns at once).
CASES = [(n, p, chunk) for p in (2, 3, 5) for n in (0, 1, 4, 7, 31) for chunk in (1, 3, 8, 100)]


def _wire_order(n, p, r, chunk):
    """(sends, receives) as lists of (lo, hi, flag), from ring_plan's view."""
    x = np.arange(n, dtype=np.float32)
    sends, recvs = [], []
    for op, view, flag in ring_steps(x, ring_plan(n, p, r, chunk)):
        lo = int(view[0]) if view.size else None
        (sends if op == "send" else recvs).append((lo, lo + view.size if view.size else None, flag))
    return sends, recvs


@pytest.mark.parametrize("n,p,chunk", CASES)
def test_the_rounds_are_the_wire_order_paired(n, p, chunk):
    for r in range(p):
        sends, recvs = _wire_order(n, p, r, chunk)
        rounds = ring_rounds(n, p, r, chunk)
        assert [(o[0], o[1], keep) for o, _, _, keep in rounds if o] == sends
        assert [(i[0], i[1], add) for _, i, add, _ in rounds if i] == recvs


@pytest.mark.parametrize("n,p,chunk", CASES)
def test_a_ranks_sends_are_its_neighbours_receives_in_order(n, p, chunk):
    plans = [ring_rounds(n, p, r, chunk) for r in range(p)]
    for r in range(p):
        sent = [out for out, _, _, _ in plans[r] if out is not None]
        received = [inc for _, inc, _, _ in plans[(r + 1) % p] if inc is not None]
        assert sent == received


@pytest.mark.parametrize("n,p", [(7, 3), (10, 4), (5, 5), (3, 4)])
def test_playing_it_sums_each_block_in_the_ring_order_on_every_rank(n, p):
    """Symbolic values: each rank's buffer holds tuples of (rank,) terms; the schedule
    played by message passing ends with block b = the terms of ranks b, b+1, ..., b-1,
    in that order, on every rank."""
    bufs = [[((r, i),) for i in range(n)] for r in range(p)]
    wires = {r: [] for r in range(p)}          # rank r's queue from rank r - 1
    progs = [ring_plan(n, p, r, 2) for r in range(p)]
    ops = []
    for r in range(p):
        first, reduce, gather = progs[r]
        seq = [("send", c0, c1) for c0, c1 in first]
        for c0, c1, _ in reduce:
            seq += [("add", c0, c1), ("send", c0, c1)]
        for c0, c1, fwd in gather:
            seq += [("store", c0, c1)] + ([("send", c0, c1)] if fwd else [])
        ops.append(seq)
    pos = [0] * p
    for _ in itertools.count():
        moved = False
        for r in range(p):
            while pos[r] < len(ops[r]):
                op, c0, c1 = ops[r][pos[r]]
                if op == "send":
                    wires[(r + 1) % p].append(bufs[r][c0:c1])
                elif not wires[r]:
                    break
                else:
                    got = wires[r].pop(0)
                    bufs[r][c0:c1] = ([g + o for g, o in zip(got, bufs[r][c0:c1])]
                                      if op == "add" else got)
                pos[r] += 1
                moved = True
        if not moved:
            break
    assert pos == [len(s) for s in ops]
    for b, (lo, hi) in enumerate(block_bounds(n, p)):
        order = [(b + j) % p for j in range(p)]
        for r in range(p):
            for i in range(lo, hi):
                assert bufs[r][i] == tuple((q, i) for q in order)
