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
and what the owner keeps are ring_schedule.py's, as on the socket ring: the same bits.

Pipelining (pipeline=True, the default): round i + 1 is encoded and its message posted
while round i's message is in flight, and round i is decoded while round i + 1's is, so
a hook's time approaches max(coding, wire) rather than their sum; a round that sends
what the previous round brings (one chunk per block) waits for it first. Every rank
posts the same sequence of batches, so sends and receives still pair up. On the CPU the
codec is golden.fast, which releases the GIL while gloo's threads move the bytes; on
CUDA the kernels queue on the GPU as before. pipeline=False runs the rounds one after the
other (the same bits: tests/test_torch_ring.py). The bytes counted: bytes_sent (headers, index and
groups), index_bytes (of which index), payload_bytes (groups); code_seconds: the host's
wall time in the codec (encode, the owner's roundtrip, decode and add; on CUDA the time
to queue the kernels), message_bytes: the messages of the last call, in round order (for
a benchmark's wire-only replay). plan(n): the rounds of an n-value buffer.
"""

from __future__ import annotations

import datetime
import time

import torch
import torch.distributed as dist

from ..ring_schedule import ring_rounds
from ..device_codec import DEFAULT_BLOCK, DeviceCodec
from .links import DEFAULT_TIMEOUT, CollectiveError

__all__ = ["TorchRing", "DEFAULT_CHUNK"]

DEFAULT_CHUNK = 1 << 22      # floats per round (16 MiB): few rounds, big kernels


class TorchRing:
    """Rank `dist.get_rank(group)` of `group` (None: the default group); `allreduce(x)`
    sums a 1-D contiguous float32 tensor in place, bit-identical on every rank."""

    def __init__(self, group=None, *, codec: str = "bounded", k: int = 10,
                 chunk: int = DEFAULT_CHUNK, block: int = DEFAULT_BLOCK,
                 timeout: float = DEFAULT_TIMEOUT, pipeline: bool = True):
        if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
            raise ValueError(f"chunk must be a positive number of floats, got {chunk!r}")
        self.group = group
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        self.backend = str(dist.get_backend(group))
        self.codec = DeviceCodec(codec, k, block)
        self.k, self.chunk = self.codec.k, chunk
        self.timeout = datetime.timedelta(seconds=timeout)
        self.pipeline = bool(pipeline)
        self.bytes_sent = self.payload_bytes = self.index_bytes = 0
        self.code_seconds = 0.0
        self.message_bytes: list[int] = []
        self._broken = False

    def __repr__(self):
        return f"<TorchRing rank {self.rank} of {self.world} over {self.backend}, {self.codec}>"

    def settings(self) -> dict:
        return {"collective": "torch-ring", "codec": self.codec.name,
                "error_bound_log2": -self.k, "chunk_floats": self.chunk,
                "index_block_groups": self.codec.block, "pipelined": self.pipeline}

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
            self.message_bytes = []
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
        rounds = self.plan(x.numel())
        if not self.pipeline:
            for rd in rounds:
                self._prepare(x, rd)
                self._post_header(x, rd)
                self._post_message(x, rd)
                self._finish(x, rd)
            return
        # Pipelined: round i + 1 is coded and its message posted while round i's message
        # is in flight; round i is decoded while round i + 1's is. A round whose chunk is
        # the one round i brings (the next step's send, one chunk per block) waits for it.
        first = rounds[0]
        self._prepare(x, first)
        self._post_header(x, first)
        self._post_message(x, first)
        for i, rd in enumerate(rounds):
            if i + 1 < len(rounds):
                nxt = rounds[i + 1]
                if _overlaps(nxt.out, rd.inc):
                    self._finish(x, rd)
                self._prepare(x, nxt)
                self._post_header(x, nxt)
                self._post_message(x, nxt)
            self._finish(x, rd)

    def plan(self, n: int) -> list:
        """This rank's rounds for a buffer of n values, in order (_Round: the value
        ranges sent and received, add, keep): Algorithm 1's schedule as paired rounds."""
        return [_Round(*rd) for rd in ring_rounds(n, self.world, self.rank, self.chunk)]

    def _prepare(self, x, rd):
        """Encode the round's outgoing chunk (the owner keeps what it sends)."""
        if rd.out is None:
            return
        dev = self._comm_device(x)
        view = x[rd.out[0]:rd.out[1]]
        t0 = time.perf_counter()
        data, index = self.codec.encode(view)
        if rd.keep:             # the owner keeps what its neighbours will decode
            view.copy_(self.codec.roundtrip(view))
        rd.send_msg = torch.cat([index.contiguous().view(torch.uint8), data]).to(dev)
        self.code_seconds += time.perf_counter() - t0
        self.message_bytes.append(rd.send_msg.numel())
        rd.hdr = torch.tensor([rd.send_msg.numel(), data.numel(), view.numel()],
                              dtype=torch.int64, device=dev)
        self.bytes_sent += rd.hdr.numel() * 8 + rd.send_msg.numel()
        self.payload_bytes += data.numel()
        self.index_bytes += index.numel() * 4

    def _post_header(self, x, rd):
        dev = self._comm_device(x)
        ops = []
        if rd.hdr is not None:
            ops.append(dist.P2POp(dist.isend, rd.hdr, self._peer(self.rank + 1), self.group))
        if rd.inc is not None:
            rd.hdr_in = torch.empty(3, dtype=torch.int64, device=dev)
            ops.append(dist.P2POp(dist.irecv, rd.hdr_in, self._peer(self.rank - 1), self.group))
        rd.works = self._post(ops, "a header")

    def _post_message(self, x, rd):
        """Wait for the header, then post the message's send and receive."""
        self._wait_all(rd.works, "a header")
        ops = []
        if rd.send_msg is not None and rd.send_msg.numel():
            ops.append(dist.P2POp(dist.isend, rd.send_msg, self._peer(self.rank + 1), self.group))
        if rd.hdr_in is not None:
            total, rd.nbytes, n = rd.hdr_in.tolist()
            inc = rd.inc
            if n != inc[1] - inc[0] or not 0 <= rd.nbytes <= total:
                raise CollectiveError(f"rank {(self.rank - 1) % self.world} sent a header "
                                      f"({total}, {rd.nbytes}, {n}) for a chunk of "
                                      f"{inc[1] - inc[0]} values")
            rd.buf = torch.empty(total, dtype=torch.uint8, device=self._comm_device(x))
            if total:
                ops.append(dist.P2POp(dist.irecv, rd.buf, self._peer(self.rank - 1), self.group))
        rd.works = self._post(ops, "a chunk")

    def _finish(self, x, rd):
        """Wait for the message, decode it and add it (or keep it)."""
        if rd.done:
            return
        rd.done = True
        self._wait_all(rd.works, "a chunk")
        rd.send_msg = rd.hdr = None
        if rd.buf is None:
            return
        buf, rd.buf = rd.buf.to(x.device), None
        split = buf.numel() - rd.nbytes
        n = rd.inc[1] - rd.inc[0]
        t0 = time.perf_counter()
        try:
            got = self.codec.decode(buf[split:], buf[:split].view(torch.int32), n)
        except ValueError as e:
            raise CollectiveError(f"rank {(self.rank - 1) % self.world} sent bytes that do "
                                  f"not decode: {e}") from None
        view = x[rd.inc[0]:rd.inc[1]]
        if rd.add:
            torch.add(got, view, out=view)    # received + own: the ring's fixed order
        else:
            view.copy_(got)
        self.code_seconds += time.perf_counter() - t0

    def _post(self, ops, what):
        if not ops:
            return []
        try:
            return dist.batch_isend_irecv(ops)
        except Exception as e:  # the pair's connection is gone
            raise CollectiveError(f"sending or receiving {what} failed: {e}") from None

    def _wait_all(self, works, what):
        for w in works:
            self._wait(w, what)

    def _wait(self, work, what):
        try:
            work.wait(self.timeout)
        except Exception as e:  # gloo raises RuntimeError on a timeout or a closed pair
            raise CollectiveError(f"waiting for {what} failed: {e}") from None


class _Round:
    """One exchange: the chunk sent (out) and the chunk received (inc), as (lo, hi) value
    ranges of the buffer or None; add: the received values are summed (reduce-scatter)
    or copied (all-gather); keep: the sender keeps what it sends (the block's owner)."""

    __slots__ = ("out", "inc", "add", "keep", "send_msg", "hdr", "hdr_in", "buf", "nbytes",
                 "works", "done")

    def __init__(self, out, inc, add, keep):
        self.out, self.inc, self.add, self.keep = out, inc, add, keep
        self.send_msg = self.hdr = self.hdr_in = self.buf = None
        self.nbytes, self.works, self.done = 0, [], False


def _overlaps(a, b):
    return a is not None and b is not None and a[0] < b[1] and b[0] < a[1]
