"""A bucket on the plain paths at the process group's own cost: where the path decided
for a bucket is the group's all-reduce (float32 or fp16), the hook issues that
all-reduce itself, asynchronously on DDP's bucket, as PyTorch's default hook does (the
Future's then() averages): no host snapshot, no hand-off to the worker's thread. A CPU
bucket's residual is added into DDP's bucket in place first (as torch's hooks divide
it in place); a GPU bucket with a residual goes to the worker (the memory lives on the
host). Neither plain path keeps a residual (fp16.py says why fp16 keeps none).

The order of the group's collectives must be the same on every rank (gloo and NCCL
match them by order: two ranks issuing the agreement's tiny all-reduce and a bucket's
all-reduce the other way round would sum unrelated tensors or hang). Two threads issue
them: DDP's (here) and the worker's (the agreements, the buckets with a residual, the
torch transport's ring). Why the order is still the same everywhere:
- whether a bucket goes here is decided from what every rank holds alike: the path the
  schedule fixes (decide.py's `peek`: the agreed config, the probes, counted in steps),
  the residual's presence (set by a lossy exchange, dropped by a plain one, on every
  rank alike; asked for GPU buckets only), the dtype and device, and whether any bucket
  went to the worker before;
- before issuing, DDP's thread waits until the worker has finished every bucket handed
  to it earlier (their collectives issued and done); a bucket handed to the worker later
  is handed over after this call returns, so its collectives come after this one.
So on every rank the group sees the buckets' collectives in DDP's bucket order, which
DDP keeps the same on every rank. The wait costs nothing where every bucket is plain
(the worker is idle); where a coded bucket precedes a plain one, the plain one waits
for it, as its collective would behind the ring on the worker's thread anyway.
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

from . import CollectiveError
from .decide import _on, plain_allreduce, ring_bytes
from .fp16 import round_half, widen_sum

__all__ = ["issue_direct", "plain_on_worker"]


def issue_direct(worker, buf, params):
    """The Future of the bucket `buf`'s plain all-reduce issued here, or None where the
    bucket goes to the worker (`worker`: the hook's HookWorker)."""
    st = worker.st
    if st.decide == "ring" or buf.dtype != torch.float32 or worker._thread is None:
        return None
    key = tuple(params)
    path = worker.decisions.peek(key)
    if path not in ("allreduce", "fp16"):
        return None
    mem = worker.memory
    cpu = buf.device.type == "cpu"
    if mem is not None and not cpu and any(k in mem.residual for k, _ in params):
        return None
    worker._q.join()    # every earlier bucket's collectives issued and done (above)
    pg = worker.group()[0]
    if worker.collective is None or worker._failed is not None \
            or _on(pg, buf.device) != buf.device:
        return None     # the worker raises the failure / moves the bucket
    if worker.layout.plan(params) is not None:
        return None     # merges buckets exchanged before: the worker splits it
    path = worker.decisions.path(key, None)     # fixed by the schedule: no agreement
    world, t0 = worker.world, time.perf_counter()
    sent = _send_form(worker, buf, params, path == "fp16",
                      mem is not None and cpu)
    worker.calls += 1
    worker.direct_calls += 1
    work = dist.all_reduce(sent, group=pg, async_op=True)

    def done(fut):
        try:
            got = fut.value()[0]
        except Exception as e:  # a peer gone: raised as the worker's failures are
            worker._failed = worker._failed or e
            raise CollectiveError(f"inceptionn hook: {type(e).__name__}: {e}") from None
        out = got.div_(world) if path == "allreduce" else widen_sum(got, world, out=buf)
        now = time.perf_counter()
        # The group runs its collectives in turn: the time this one waited behind an
        # earlier bucket's all-reduce is that bucket's, not this path's (a small last
        # bucket would otherwise look slow on every plain path and go to the ring, which
        # runs beside the group's all-reduce and takes CPU from it).
        start, worker.group_free = max(t0, worker.group_free), now
        worker.decisions.record(key, path, now - start)
        worker.hook_seconds.append(now - t0)
        return out

    return work.get_future().then(done)


def plain_on_worker(worker, t, params, fp16: bool = False, compensated: bool = False) -> None:
    """The float32 bucket `t` (on the host, or the torch transport's device) summed in
    place by the process group's all-reduce on the worker's thread (float32, or float16
    with `fp16`), a host bucket's residual added in first (`compensated`: it is, by the
    snapshot, and the loss buffer zeroed)."""
    sent = _send_form(worker, t, params, fp16,
                      worker.memory is not None and t.device.type == "cpu", compensated)
    plain_allreduce(sent, worker.group()[0], worker._device)
    if fp16:
        widen_sum(sent, worker.world, out=t, mean=False)


def _send_form(worker, t, params, fp16: bool, feedback: bool, compensated: bool = False):
    """What the group all-reduces for the float32 CPU-or-device bucket `t`: `t` itself
    (float32) or its float16 form (fp16.py, one pass). With `feedback` (a CPU bucket and
    a memory) the residuals are added into `t` first (unless `compensated`: the snapshot
    did) and then dropped: the float32 path drops nothing, so delivered plus the ranks'
    mean residual stays the sum of the true mean gradients (memory.py); fp16's rounding
    is not kept, as the group's own float16 sums are not (fp16.py)."""
    mem, world = worker.memory, worker.world
    if feedback:
        if not compensated:
            mem.compensate(t.detach().numpy().reshape(-1), params)
        mem.clear(params)
    worker.bytes_sent += ring_bytes(t.numel(), world) // (2 if fp16 else 1)
    return round_half(t.detach(), world) if fp16 else t
