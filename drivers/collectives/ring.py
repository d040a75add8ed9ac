"""The paper's aggregator-free exchange (Algorithm 1): reduce-scatter then all-gather
around a ring of P ranks, in P blocks, over TCP.

Block b (P contiguous blocks of a buffer of any length; P need not divide it) starts at
rank b, and each rank in turn adds its own contribution: rank b+1 computes
g_b + g_{b+1}, rank b+2 adds g_{b+2}, ..., so every block is summed in float32 in one
fixed order by one rank, its owner (b - 1 mod P), which then sends the result around
the ring. Every rank ends with the owner's bytes, bit for bit.

With compression (the NIC on a tagged socket, or `emulate=True` applying the golden
roundtrip in software) every hop carries the lossy roundtrip of what was sent: the
partial sums on the way round, and the final block in the all-gather, where the owner
also keeps the roundtrip of what it sent (the roundtrip is idempotent, so forwarding a
received block changes nothing and all ranks agree).

Pipelining: a block moves in chunks; one sender thread per rank sends chunks in the
order the neighbour receives them, while the main thread receives, sums and hands each
summed chunk on, so receive, sum and send overlap and a rank holds one chunk of receive
buffer beyond its own data.
"""

from __future__ import annotations

import queue
import threading

import numpy as np

from ... import golden
from .. import sockets
from .transport import (DEFAULT_TIMEOUT, Collective, CollectiveError, as_float32_buffer,
                        rendezvous)

__all__ = ["Ring", "block_bounds", "DEFAULT_CHUNK"]

DEFAULT_CHUNK = 1 << 16          # floats per chunk (256 KiB)


def block_bounds(n: int, p: int) -> list[tuple[int, int]]:
    """P contiguous blocks of n values, the first n % p one value longer."""
    base, extra = divmod(n, p)
    out, lo = [], 0
    for b in range(p):
        hi = lo + base + (1 if b < extra else 0)
        out.append((lo, hi))
        lo = hi
    return out


class _Sender:
    """Sends (array view) items on one link in order; an error stops the rank."""

    def __init__(self, link, on_error):
        self.link, self.on_error = link, on_error
        self.q: queue.Queue = queue.Queue()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=f"ring-send-{link.peer}", daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            item = self.q.get()
            if item is None:
                return
            if self.error is not None:
                continue
            try:
                self.link.send_floats(item)
            except BaseException as e:  # reported by the main thread
                self.error = e
                self.on_error()

    def put(self, view):
        self.q.put(view)

    def finish(self):
        self.q.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error


class Ring(Collective):
    """A ring of `world` ranks; `allreduce(x)` sums float32 buffers in place.

    Build it with `Ring.from_store(store, rank, world, ...)` (a torch.distributed Store:
    TCPStore, FileStore, or the default process group's) or from explicit links.
    compress=True: data on tagged gradient sockets (the NIC compresses them);
    emulate=True: plain sockets, the golden roundtrip applied per hop in software; both
    give the same numbers. k is the NIC's error bound 2^-k (needed for the owner's copy).
    """

    def __init__(self, rank, world, links, *, k=golden.K_DEFAULT, compress=False, emulate=False,
                 chunk=DEFAULT_CHUNK, timeout=DEFAULT_TIMEOUT):
        if compress and emulate:
            raise ValueError("compress (the NIC) and emulate (software) exclude each other")
        if not isinstance(chunk, int) or chunk < 1:
            raise ValueError(f"chunk must be a positive number of floats, got {chunk!r}")
        self.rank, self.world, self.k = rank, world, golden.check_k(k)
        self.compress, self.emulate, self.chunk, self.timeout = compress, emulate, chunk, timeout
        self.next = links.get((rank + 1) % world) if world > 1 else None
        self.prev = links.get((rank - 1) % world) if world > 1 else None
        self._links = links
        self._calls = 0
        self.bytes_sent = 0          # float bytes this rank has sent (before compression)
        self._broken = False

    @classmethod
    def from_store(cls, store, rank: int, world: int, *, host: str = "127.0.0.1",
                   prefix: str = "inceptionn/ring", k=golden.K_DEFAULT, compress=False,
                   emulate=False, mss=sockets.GRADIENT_MSS, dscp=sockets.DSCP_COMPRESS,
                   chunk=DEFAULT_CHUNK, timeout=DEFAULT_TIMEOUT):
        if world < 1 or not 0 <= rank < world:
            raise ValueError(f"rank {rank} of world {world} is not a valid position")
        peers = sorted({(rank + 1) % world, (rank - 1) % world} - {rank})
        links = rendezvous(store, rank, world, peers, host=host, prefix=prefix,
                           compress=compress, mss=mss, dscp=dscp, timeout=timeout)
        return cls(rank, world, links, k=k, compress=compress, emulate=emulate, chunk=chunk,
                   timeout=timeout)

    # ------------------------------------------------------------------ checks

    def _agree(self, n):
        """Every rank learns every rank's length (P - 1 steps round the control ring),
        so a mismatch is the same clear error everywhere."""
        seen = {self.rank: n}
        msg = [self.rank, n]
        for _ in range(self.world - 1):
            self.next.send_msg(msg)
            msg = self.prev.recv_msg()
            seen[msg[0]] = msg[1]
        if len(set(seen.values())) > 1:
            raise ValueError(f"allreduce call {self._calls}: buffer lengths differ between "
                             f"ranks: {dict(sorted(seen.items()))}")

    # ------------------------------------------------------------------ the exchange

    def allreduce(self, x) -> np.ndarray:
        """Sum `x` (1-D float32, contiguous) over all ranks, in place; returns x."""
        x = as_float32_buffer(x, "allreduce buffer")
        if self._broken:
            raise CollectiveError("the ring is broken by an earlier failure; build a new one")
        self._calls += 1
        if self.world == 1:
            return x
        try:
            self._agree(x.size)
            self._exchange(x)
        except BaseException:
            self._broken = True
            self.close()
            raise
        return x

    def _rt(self, a):
        return golden.roundtrip(a, self.k)

    def _exchange(self, x):
        p, r = self.world, self.rank
        bounds = block_bounds(x.size, p)
        lossy = self.compress or self.emulate
        sender = _Sender(self.next, self._wake)
        buf = np.empty(min(self.chunk, max(1, bounds[0][1] - bounds[0][0])), np.float32)
        try:
            # Reduce-scatter step s: send block (r - s), receive block (r - s - 1) and add.
            lo, hi = bounds[r]
            for c0 in range(lo, hi, self.chunk):
                self._send(sender, x[c0:min(c0 + self.chunk, hi)])
            for s in range(p - 1):
                b = (r - s - 1) % p
                lo, hi = bounds[b]
                last = s == p - 2
                for c0 in range(lo, hi, self.chunk):
                    c1 = min(c0 + self.chunk, hi)
                    got = buf[:c1 - c0]
                    self._recv(got, sender)
                    if self.emulate:
                        got[:] = self._rt(got)
                    # Fixed order: the partial sum so far, plus this rank's own values.
                    np.add(got, x[c0:c1], out=x[c0:c1])
                    if last and lossy:
                        x[c0:c1] = self._rt(x[c0:c1])   # the owner keeps what it sends
                    self._send(sender, x[c0:c1])         # next step (or the all-gather)
            # All-gather step s: receive block (r - s), final at its owner; forward it.
            for s in range(p - 1):
                b = (r - s) % p
                lo, hi = bounds[b]
                for c0 in range(lo, hi, self.chunk):
                    c1 = min(c0 + self.chunk, hi)
                    self._recv(x[c0:c1], sender)
                    if self.emulate:
                        x[c0:c1] = self._rt(x[c0:c1])
                    if s < p - 2:
                        self._send(sender, x[c0:c1])
        finally:
            sender.finish()

    def _send(self, sender, view):
        if view.size:
            sender.put(view)
            self.bytes_sent += view.nbytes

    def _recv(self, out, sender):
        if sender.error is not None:
            raise sender.error
        if out.size:
            self.prev.recv_floats_into(out)

    def _wake(self):
        # The sender failed: unblock the main thread's receive.
        try:
            self.prev.data.shutdown(2)
        except OSError:
            pass
