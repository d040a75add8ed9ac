"""What the DDP hook runs for one IncState (hook.py): the collective, set up on first use
from the rendezvous store; the thread that exchanges the buckets in DDP's order; the
compressors' per-bucket states; the rank's error-feedback memory and the ring's codec
that records the loss it feeds back.

A bucket's walk: the hook's call (hook.py) hands a host snapshot to this thread; the
bucket goes as its decided path says (decide.py): around the ring, compensated and its
loss recorded (`feeding`: memory.feedback), or through the process group's own
all-reduce (hook_direct.py); a method the ring does not carry itself takes its
compressor's step (hook_state.BucketStates: the communicator's collective over the
process group, its element-wise sums around the same ring).
"""

from __future__ import annotations

import os
import queue
import threading
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.distributed as dist

from ...golden.fast_memory import add_and_clear
from . import CollectiveError, Ring, WorkerAggregator
from . import hook_state
from .decide import Decisions, agree_max
from .hook_direct import plain_on_worker
from .hook_options import _default_host
from .memory import Memory, feedback
from .transports.agreement import agree_via_store

if TYPE_CHECKING:
    from .hook import IncState

__all__ = ["HookWorker"]


class HookWorker:
    """What the hook runs for one IncState: the collective (set up on first use), the
    thread that exchanges the buckets in order, the compressors' per-bucket states and
    the rank's error-feedback memory (one Memory, keyed by parameter)."""

    def __init__(self, settings: IncState):
        self.st = settings
        self.collective = None
        self.calls = 0
        self.direct_calls = 0   # of them, all-reduced from the hook's call (hook_direct.py)
        self.bytes_sent = 0
        self.hook_seconds: list[float] = []
        self.world: int | None = None
        self.rank: int | None = None
        self.memory: Memory | None = None
        # A parameter's key (hook_state.py), the buckets it was exchanged in, and what a
        # loaded state says (the compressors' steps, the saving job's world and rank).
        self.keys = hook_state.ParamKeys()
        self.layout = hook_state.Layout()
        self.loaded_steps: dict[int, int] = {}
        self.saved_world: int | None = None
        self.saved_rank: int | None = None
        if settings.ring_fed:       # the ring's recorded loss
            self.memory = Memory()
        else:
            comp = settings.compressor()
            if comp.feedback:           # the method's own residual
                self.memory = comp.new_memory()
        self.codec = settings.ring_codec()     # the socket ring's, the loss recorded
        self.buckets = hook_state.BucketStates(self)
        self.decisions = Decisions(settings.decide)
        self._device = torch.device("cpu")     # the bucket's device (the plain path's)
        self._snapshots: dict = {}      # bucket index -> [(host buffer, its Future)] x 2
        self._losses: dict = {}         # bucket -> the ring's loss buffer, the residuals' home
        self._thread: threading.Thread | None = None
        self._failed: BaseException | None = None
        self._average_in_ring = False   # this bucket's exchange may leave x as the mean
        self._averaged = False          # it did (the worker then does not divide)
        self._prep = 0.0                # seconds of the hook's call's snapshot (hook.py)
        self.group_free = 0.0           # when the last direct all-reduce ended (hook_direct)

    # ------------------------------------------------------------------ setup

    def group(self):
        pg = self.st.process_group or dist.group.WORLD
        return pg, dist.get_rank(pg), dist.get_world_size(pg)

    def _the_store(self):
        st = self.st
        if st.store is not None:
            return st.store
        addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        if not addr or not port:
            raise CollectiveError("no rendezvous store: pass IncState(store=...) or run under "
                                  "torchrun (MASTER_ADDR and MASTER_PORT)")
        import datetime
        try:
            return dist.TCPStore(addr, int(port), is_master=False, wait_for_workers=False,
                                 timeout=datetime.timedelta(seconds=st.timeout))
        except Exception as e:  # the store is not reachable
            raise CollectiveError(f"cannot reach the rendezvous store at {addr}:{port}: {e}") \
                from None

    def _setup(self):
        st = self.st
        pg, rank, world = self.group()
        self.world, self.rank = world, rank
        if (self.saved_world, self.saved_rank) not in ((None, None), (world, rank)):
            raise CollectiveError(
                f"the loaded hook state is rank {self.saved_rank}'s of {self.saved_world}; "
                f"this is rank {rank} of {world}: each rank loads its own, in a job as large")
        if st.transport == "torch":
            self._setup_torch(pg, rank, world)
            return
        store = self._the_store()
        comp = st.compressor()
        wire = st.wire if st.wire in comp.wires else comp.wires[0]
        if st.mode == "wa" and comp.ring_native:
            agree_via_store(store, st.prefix, rank, world, st.settings(), st.timeout)
            self.collective = WorkerAggregator.from_store(
                store, rank, world, host=st.host or _default_host(), prefix=st.prefix,
                k=st.k, codec=st.codec, compress=wire == "nic", emulate=wire == "emulate",
                mss=st.mss, chunk=st.chunk, timeout=st.timeout)
            return
        self.collective = Ring.from_store(
            store, rank, world, host=st.host or _default_host(), prefix=st.prefix, k=st.k,
            codec=self.codec, wire=wire, mss=st.mss, chunk=st.chunk, timeout=st.timeout,
            codec_threads=st.codec_threads, settings=st.settings())

    def _setup_torch(self, pg, rank, world):
        """The ring over the process group; the settings compared over it too."""
        from .transports.agreement import compare_settings
        from .transports.torch_ring import TorchRing
        from .transports.torch_scaled import ScaledTorchRing
        st = self.st
        every: list = [None] * world
        dist.all_gather_object(every, st.settings(), group=pg)
        compare_settings(dict(enumerate(every)))
        if st.bound == "scaled":
            self.collective = ScaledTorchRing(pg, k=st.k, share=st.share, chunk=st.chunk,
                                              timeout=st.timeout)
        else:
            self.collective = TorchRing(pg, codec=st.codec, k=st.k, chunk=st.chunk,
                                        timeout=st.timeout)

    def snapshot(self, bucket, buf, fut, params=()):
        """(the bucket's float32 copy the worker exchanges, the CUDA event it waits for
        or None, whether the copy has the residuals added in), taken at the hook's call.
        Never the bucket itself: DDP may write the bucket's memory before the Future
        completes (seen on CPU: a bucket read later by the worker held other values than
        at the call, in 3 test runs of 4)."""
        if buf.device.type != "cuda":
            index = bucket.index() if hasattr(bucket, "index") else None   # DDP's GradBucket has it
            residual = self._residual_of(params, buf) if index is not None else None
            return self.host_snapshot(index, buf, fut, residual), None, residual is not None
        if self.st.transport == "torch":     # stays on the GPU, coded there
            snap = buf.detach().to(torch.float32, copy=True)
        else:
            snap = torch.empty(buf.shape, dtype=torch.float32, pin_memory=True)
            src = buf.detach() if buf.dtype == torch.float32 else buf.detach().float()
            snap.copy_(src, non_blocking=True)   # on the producing stream, in order
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(buf.device))
        return snap, event, False

    def _residual_of(self, params, buf):
        """The bucket's whole residual, where error feedback on the ring keeps it as one
        buffer of a float32 host bucket's size (the loss buffer the last exchange of
        these parameters recorded into); else None. The snapshot then adds it in and
        zeroes it in its own pass: the exchange neither compensates nor zeroes the
        loss buffer again (two passes over the bucket fewer, on the worker: measured in
        docs/benchmarks.md). The bucket's last exchange is over: DDP waited for it."""
        mem = self.memory
        if mem is None or not self.st.ring_fed or mem.beta is not None \
                or buf.dtype != torch.float32 or not buf.is_contiguous():
            return None
        loss = self._losses.get(tuple(params))
        if loss is None or loss.size != buf.numel() or not mem.held_in(params, loss):
            return None
        return loss

    def host_snapshot(self, index, buf, fut, residual=None):
        """A host copy of the CPU bucket `buf` for the worker. Two buffers per bucket
        index take turns: the one used two calls ago is filled again when that
        exchange's Future is done, else a new one is made. The Future's tensor is that
        buffer, so it holds until the second call after it for the same bucket (DDP
        reads it before its next backward; a callback still copying it while the next
        step's hook runs keeps its values). Why: a fresh clone of a large bucket every
        step faults in every page of it on the hook's critical path (docs/benchmarks.md).
        Always float32: a 16-bit bucket is widened as it is copied. With `residual`
        (float32 of the bucket's size): the copy is bucket + residual and the residual
        is zeroed (it is the exchange's loss buffer, ready to record)."""
        if index is None:
            if residual is not None:
                raise ValueError("a residual goes with a bucket's snapshot buffers")
            return buf.detach().to(torch.float32, copy=True)
        turns = self._snapshots.setdefault(index, [])
        if len(turns) == 2 and turns[0][1].done() and turns[0][0].shape == buf.shape:
            snap = turns.pop(0)[0]
        else:
            snap = torch.empty(buf.shape, dtype=torch.float32)
            if len(turns) == 2:
                turns.pop(0)
        if residual is None:
            snap.copy_(buf.detach())
        else:
            add_and_clear(buf.detach().numpy().reshape(-1), residual,
                          snap.numpy().reshape(-1))        # one pass: golden/fast_memory.py
        turns.append((snap, fut))
        return snap

    # ------------------------------------------------------------------ the thread

    def submit(self, item):
        if self._thread is None:
            self._q: queue.Queue = queue.Queue()
            self._thread = threading.Thread(target=self._run, name="inceptionn-hook",
                                            daemon=True)
            self._thread.start()
        self._q.put(item)

    def _run(self):
        import time
        st = self.st
        while True:
            item = self._q.get()
            if item is None:
                self._q.task_done()
                return
            snap, device, dtype, params, fut, event, compensated, self._prep = item
            try:
                if self._failed is not None:
                    raise CollectiveError(f"an earlier bucket's exchange failed: {self._failed}")
                t0 = time.perf_counter()
                if device.type == "cuda":   # this thread's NCCL calls use the bucket's GPU
                    torch.cuda.set_device(device)
                if self.collective is None:
                    self._setup()
                if event is not None:
                    event.synchronize()      # the snapshot's copy has landed
                self._device = device
                if st.transport == "torch":     # on the bucket's device, in place
                    v = snap.view(-1)
                    self._timed(params, {p: (lambda p=p: self._exchange_tensor(v, p))
                                         for p in ("ring", "allreduce", "fp16")})
                    t = snap
                else:
                    self._averaged = False      # the ring may divide as it writes
                    out = self._exchange(snap.numpy().reshape(-1), params, compensated)
                    if not self._averaged:
                        out /= np.float32(self.world)
                    t = torch.from_numpy(out).view(snap.shape)
                self.calls += 1
                self.hook_seconds.append(time.perf_counter() - t0)
                fut.set_result(t.to(device=device, dtype=dtype))   # t itself if both match
            except BaseException as e:  # handed to DDP through the future
                if self._failed is None and self.collective is None:
                    _release_waiting_ranks(e, st.store)
                self._failed = self._failed or e
                if self.collective is not None:
                    self.collective.close()
                # DDP passes on the message only, so the message names the class.
                fut.set_exception(CollectiveError(f"inceptionn hook: {type(e).__name__}: {e}"))
            finally:
                self._q.task_done()

    def _exchange(self, arr, params, compensated=False):
        # A bucket merging buckets exchanged before (a resumed run's first step) goes as
        # those buckets: the numbers do not depend on DDP's rebuild (hook_state.py).
        groups = self.layout.plan(params)
        if groups is None:
            self._average_in_ring = True
            return self._exchange_bucket(arr, params, compensated)
        self._average_in_ring = False   # several exchanges: the mean taken after them
        if compensated:     # the snapshot found no such bucket's residual: a bug of ours
            raise RuntimeError("a merged bucket's snapshot had a residual added in")
        return hook_state.exchange_as(arr, params, groups, self._exchange_bucket)

    def _exchange_bucket(self, arr, params, compensated=False):
        # A dense compressor with error feedback (truncation) rides the ring as INCEPTIONN
        # does: its select and expand are the identity, so the ring sums the bucket itself.
        st = self.st
        if st.ring_native or st.ring_fed:
            t = torch.from_numpy(arr)
            c = compensated     # the residuals already in arr (and the loss buffer zeroed)
            self._timed(params, {"ring": lambda: self._ring(arr, params, c),
                                 "allreduce": lambda: plain_on_worker(self, t, params,
                                                                      compensated=c),
                                 "fp16": lambda: plain_on_worker(self, t, params, True, c)})
            return arr
        return self.buckets.step(arr, params)

    def _timed(self, params, runs: dict) -> None:
        """The bucket's exchange on the path decided for it (decide.py), timed."""
        import time
        key = tuple(params)
        path = self.decisions.path(key, self._agree)
        t0 = time.perf_counter()
        runs[path]()
        # plus the hook's call's snapshot (once per bucket handed over): a plain path
        # issued from the hook's call times its own pass over the bucket (hook_direct.py)
        prep, self._prep = self._prep, 0.0
        self.decisions.record(key, path, time.perf_counter() - t0 + prep)

    def _agree(self, values):
        return agree_max(values, self.group()[0], self._device)

    def _ring(self, arr, params, compensated=False):
        before = self.collective.bytes_sent
        # The socket ring writes the final values as the mean (a pass over the bucket
        # fewer: socket_ring.Ring.allreduce); the WA divides after, here.
        mean = self._average_in_ring and isinstance(self.collective, Ring)
        with self.feeding(arr, params, compensated):
            if mean:
                self.collective.allreduce(arr, divide_by=self.world)
            else:
                self.collective.allreduce(arr)
        self._averaged = mean
        self.bytes_sent += self.collective.bytes_sent - before

    def feeding(self, arr, params, compensated=False):
        """Error feedback around the bucket's exchange on the ring (memory.feedback):
        compensated with this rank's memory, each hop's loss recorded by the ring's
        codec, the loss kept as the residuals (in the bucket's loss buffer, kept from
        step to step). The study runs its simulated ranks' exchanges through it too.
        compensated: arr has the residuals added in and the loss buffer is zeroed (the
        snapshot did both)."""
        loss = None if self.memory is None else self._loss_buffer(tuple(params), arr.size)
        return feedback(self.memory, self.codec, arr, params, loss, compensated)

    def _loss_buffer(self, key, size):
        """The bucket's loss buffer, kept from step to step; a new bucket's (DDP's
        rebuild) drops those of the buckets its parameters were in."""
        loss = self._losses.get(key)
        if loss is None:
            mine = {p for p, _ in key}
            for old in [k for k in self._losses if any(p in mine for p, _ in k)]:
                del self._losses[old]
            loss = self._losses[key] = np.empty(size, np.float32)
        return loss

    def _exchange_tensor(self, t, path="ring"):
        if path != "ring":      # the process group's (no memory on this transport)
            plain_on_worker(self, t, (), path == "fp16")
        else:
            before = self.collective.bytes_sent
            self.collective.allreduce(t)
            self.bytes_sent += self.collective.bytes_sent - before
        t /= self.world
        if t.is_cuda:
            torch.cuda.current_stream(t.device).synchronize()   # final when the Future is set
        return t

    def close(self):
        if self._thread is not None:
            self._q.put(None)
            self._thread.join(self.st.timeout)
            self._thread = None
        self._snapshots.clear()     # the reused buffers: two buckets' worth each
        self._losses.clear()
        if self.collective is not None:
            self.collective.close()
            self.collective = None


def _release_waiting_ranks(error, store) -> None:
    """The ring could not be set up (a peer never joined: no hook, or it died): a rank
    without the hook waits in gloo for this rank, so this process's connections but the
    store's are ended and that rank raises too (inceptionn/group_teardown.py). Not on a
    SettingsMismatch: every rank raises that itself, and the group stays usable."""
    from . import SettingsMismatch
    from ...group_teardown import shut_down_connections
    if isinstance(error, CollectiveError) and not isinstance(error, SettingsMismatch):
        shut_down_connections([os.environ.get("MASTER_PORT"), getattr(store, "port", None)])
