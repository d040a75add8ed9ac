"""Algorithm 1 (the ring's reduce-scatter and all-gather) over torch.distributed
point-to-point, every hop coded on the values' own device by the device codec: NCCL
between GPUs, gloo between CPUs (a CUDA buffer under gloo is coded on its GPU and only
the compressed bytes cross to the host). The socket ring (ring.py) is the other wire.

The exchange is cut in rounds: in round (step s, chunk c) rank r sends chunk c of block
r - s (reduce-scatter) or r + 1 - s (all-gather) to rank r + 1 and receives chunk c of
the block before it from rank r - 1, so every round's send and receive pair up across
the ring, as NCCL needs (both are posted in one batch_isend_irecv: no rank waits on a
send its neighbour has not yet posted a receive for). Each round is two such batches: a
header (message bytes, group bytes, values) and the message: the index (int32, the
device codec's block offsets) then the groups. The sums, the order they are taken in
and what the owner keeps are those of ring.py and golden's ring_plan: the same bits.

Pipelining: a round's encode and the previous round's transfer are not overlapped here
(NCCL's sends are asynchronous on the GPU, so on CUDA the codec kernels queue behind the
transfers; on gloo each round waits). The bytes counted: bytes_sent (headers, index and
groups), index_bytes (of which index), payload_bytes (groups).
"""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist

from ...golden.compressors.communicator import block_bounds
from .device_codec import DEFAULT_BLOCK, DeviceCodec
from .transport import DEFAULT_TIMEOUT, CollectiveError

__all__ = ["TorchRing", "DEFAULT_CHUNK"]

DEFAULT_CHUNK = 1 << 22      # floats per round (16 MiB): few rounds, big kernels


class TorchRing:
    """Rank `dist.get_rank(group)` of `group` (None: the default group); `allreduce(x)`
    sums a 1-D contiguous float32 tensor in place, bit-identical on every rank."""

    def __init__(self, group=None, *, codec: str = "bounded", k: int = 10,
                 chunk: int = DEFAULT_CHUNK, block: int = DEFAULT_BLOCK,
                 timeout: float = DEFAULT_TIMEOUT):
        if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
            raise ValueError(f"chunk must be a positive number of floats, got {chunk!r}")
        self.group = group
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        self.backend = str(dist.get_backend(group))
        self.codec = DeviceCodec(codec, k, block)
        self.k, self.chunk = self.codec.k, chunk
        self.timeout = datetime.timedelta(seconds=timeout)
        self.bytes_sent = self.payload_bytes = self.index_bytes = 0
        self._broken = False

    def __repr__(self):
        return f"<TorchRing rank {self.rank} of {self.world} over {self.backend}, {self.codec}>"

    def settings(self) -> dict:
        return {"collective": "torch-ring", "codec": self.codec.name,
                "error_bound_log2": -self.k, "chunk_floats": self.chunk,
                "index_block_groups": self.codec.block}

    def close(self):
        pass

    def _peer(self, r):
        r %= self.world
        return r if self.group is None else dist.get_global_rank(self.group, r)

    def _comm_device(self, x):
        return x.device if self.backend == "nccl" else torch.device("cpu")

    # ------------------------------------------------------------------ the exchange

    def allreduce(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.dtype != torch.float32 or x.dim() != 1 \
                or not x.is_contiguous():
            raise ValueError("allreduce buffer must be a 1-D contiguous float32 tensor")
        if self._broken:
            raise CollectiveError("the ring is broken by an earlier failure; build a new one")
        if self.world == 1:
            return x
        try:
            self._agree(x)
            self._rounds(x)
        except BaseException:
            self._broken = True
            raise
        return x

    def _agree(self, x):
        """Every rank's length, compared in one all-reduce (max of n and of -n)."""
        n = x.numel()
        t = torch.tensor([n, -n], dtype=torch.int64, device=self._comm_device(x))
        self._wait(dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.group, async_op=True),
                   "the buffer lengths")
        hi, lo = t.tolist()
        if hi != n or -lo != n:
            raise ValueError(f"buffer lengths differ between ranks ({-lo} to {hi} values)")

    def _rounds(self, x):
        p, r = self.world, self.rank
        bounds = block_bounds(x.numel(), p)

        def chunks(b):
            lo, hi = bounds[b % p]
            return [(c0, min(c0 + self.chunk, hi)) for c0 in range(lo, hi, self.chunk)]

        # reduce-scatter: step s sends block r - s, receives block r - s - 1 and adds;
        # the owner of block r + 1 keeps what it sends in the all-gather's first step.
        for s in range(p - 1):
            out, inc = chunks(r - s), chunks(r - s - 1)
            for c in range(max(len(out), len(inc))):
                self._round(x, out[c] if c < len(out) else None,
                            inc[c] if c < len(inc) else None, add=True, keep=False)
        # all-gather: step s sends block r + 1 - s (its own at s = 0), receives block r - s.
        for s in range(p - 1):
            out, inc = chunks(r + 1 - s), chunks(r - s)
            for c in range(max(len(out), len(inc))):
                self._round(x, out[c] if c < len(out) else None,
                            inc[c] if c < len(inc) else None, add=False, keep=s == 0)

    def _round(self, x, out, inc, *, add, keep):
        dev = self._comm_device(x)
        send_msg = None
        ops = []
        if out is not None:
            view = x[out[0]:out[1]]
            data, index = self.codec.encode(view)
            if keep:             # the owner keeps what its neighbours will decode
                view.copy_(self.codec.roundtrip(view))
            send_msg = torch.cat([index.contiguous().view(torch.uint8), data]).to(dev)
            hdr = torch.tensor([send_msg.numel(), data.numel(), view.numel()],
                               dtype=torch.int64, device=dev)
            ops.append(dist.P2POp(dist.isend, hdr, self._peer(self.rank + 1), self.group))
            self.bytes_sent += hdr.numel() * 8 + send_msg.numel()
            self.payload_bytes += data.numel()
            self.index_bytes += index.numel() * 4
        hdr_in = None
        if inc is not None:
            hdr_in = torch.empty(3, dtype=torch.int64, device=dev)
            ops.append(dist.P2POp(dist.irecv, hdr_in, self._peer(self.rank - 1), self.group))
        self._batch(ops, "a header")
        ops, buf = [], None
        if send_msg is not None and send_msg.numel():
            ops.append(dist.P2POp(dist.isend, send_msg, self._peer(self.rank + 1), self.group))
        if hdr_in is not None:
            total, nbytes, n = hdr_in.tolist()
            if n != inc[1] - inc[0] or not 0 <= nbytes <= total:
                raise CollectiveError(f"rank {(self.rank - 1) % self.world} sent a header "
                                      f"({total}, {nbytes}, {n}) for a chunk of "
                                      f"{inc[1] - inc[0]} values")
            buf = torch.empty(total, dtype=torch.uint8, device=dev)
            if total:
                ops.append(dist.P2POp(dist.irecv, buf, self._peer(self.rank - 1), self.group))
        self._batch(ops, "a chunk")
        if buf is None:
            return
        buf = buf.to(x.device)
        split = buf.numel() - nbytes
        try:
            got = self.codec.decode(buf[split:], buf[:split].view(torch.int32), n)
        except ValueError as e:
            raise CollectiveError(f"rank {(self.rank - 1) % self.world} sent bytes that do "
                                  f"not decode: {e}") from None
        view = x[inc[0]:inc[1]]
        if add:
            torch.add(got, view, out=view)    # received + own: the ring's fixed order
        else:
            view.copy_(got)

    def _batch(self, ops, what):
        if not ops:
            return
        try:
            works = dist.batch_isend_irecv(ops)
        except Exception as e:  # the pair's connection is gone
            raise CollectiveError(f"sending or receiving {what} failed: {e}") from None
        for w in works:
            self._wait(w, what)

    def _wait(self, work, what):
        try:
            work.wait(self.timeout)
        except Exception as e:  # gloo raises RuntimeError on a timeout or a closed pair
            raise CollectiveError(f"waiting for {what} failed: {e}") from None
