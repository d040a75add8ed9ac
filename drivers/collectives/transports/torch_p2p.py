"""A communicator transport over torch.distributed point-to-point (any backend with
send/recv: gloo on CPU), for the methods whose messages need no tagging: preludes,
all-gathers, gTop-k's tree, and the element-wise sums when the communicator sends them
over it (with no socket Ring: communicator.ring_sum). It moves bytes only.

A message is its length (one int64) then its bytes (uint8), both sent with isend, so a
send never waits for the peer's recv (communicator.py's schedules send first); `flush`
waits for this rank's sends at the end of a step. The counters count message bytes,
as the simulation does. Every wait is bounded by `timeout` seconds (a dead or silent
peer is a CollectiveError, not the process group's half-hour wait).
"""

from __future__ import annotations

import datetime

import numpy as np
import torch
import torch.distributed as dist

from .links import DEFAULT_TIMEOUT, CollectiveError

__all__ = ["TorchTransport"]


class TorchTransport:
    """Rank `dist.get_rank(group)` of `group` (None: the default group)."""

    def __init__(self, group=None, *, timeout=DEFAULT_TIMEOUT):
        self.group = group
        self.timeout = datetime.timedelta(seconds=timeout)
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        self.sent = self.received = 0
        self._pending: list = []

    def _global(self, peer):
        # send/recv name global ranks, whatever the group.
        return peer if self.group is None else dist.get_global_rank(self.group, peer)

    def send(self, peer, data):
        n = torch.tensor([len(data)], dtype=torch.int64)
        tensors = [n]
        if len(data):
            tensors.append(torch.from_numpy(np.frombuffer(data, np.uint8).copy()))
        for tensor in tensors:      # kept alive until flush
            work = self._call(dist.isend, tensor, peer, "a send")
            self._pending.append((work, tensor, peer))
        self.sent += len(data)

    def recv(self, peer):
        n = torch.empty(1, dtype=torch.int64)
        self._wait(self._call(dist.irecv, n, peer, "a receive"), peer, "a message's length")
        body = torch.empty(int(n.item()), dtype=torch.uint8)
        if body.numel():
            self._wait(self._call(dist.irecv, body, peer, "a receive"), peer, "a message")
        self.received += body.numel()
        return body.numpy().tobytes()

    def flush(self):
        pending, self._pending = self._pending, []
        for work, _, peer in pending:
            self._wait(work, peer, "a send to complete")

    def _call(self, fn, tensor, peer, what):
        try:
            return fn(tensor, self._global(peer), group=self.group)
        except Exception as e:  # gloo: the pair's connection is gone
            raise CollectiveError(f"rank {peer}: {what} failed: {e}") from None

    def _wait(self, work, peer, what):
        try:
            work.wait(self.timeout)
        except Exception as e:  # gloo raises RuntimeError on a timeout or a closed pair
            raise CollectiveError(f"rank {peer}: waiting for {what} failed: {e}") from None
