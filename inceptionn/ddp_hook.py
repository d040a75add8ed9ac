"""A PyTorch DDP communication hook that all-reduces each gradient bucket through the
paper's ring (or the worker-aggregator baseline), compressed by the NIC or emulated.

    import torch.distributed as dist
    from inceptionn.ddp_hook import IncState, inc_allreduce_hook

    dist.init_process_group("gloo")                      # torchrun sets the rendezvous
    model = DDP(model)
    model.register_comm_hook(IncState(k=10, emulate=True), inc_allreduce_hook)

The ring's sockets are set up once, lazily, from the process group's store, so the same
script runs with `torchrun --nproc-per-node 4` on one machine or across machines with
torchrun's usual flags (then say which address each rank listens on: `host=`, or the
INCEPTIONN_HOST environment variable; by default the address this machine uses to reach
MASTER_ADDR). The hook averages, like PyTorch's default all-reduce hook.
"""
# No `from __future__ import annotations`: DDP checks the hook's return annotation.

import itertools
import os
import socket

import numpy as np
import torch
import torch.distributed as dist

from . import golden
from .drivers.collectives import DEFAULT_CHUNK, DEFAULT_TIMEOUT, Ring, WorkerAggregator
from .drivers.collectives.compressed import step as compressed_step
from .golden import compressors

__all__ = ["IncState", "inc_allreduce_hook", "METHODS", "MODES"]

MODES = ("inc", "wa")
RING_METHODS = ("inceptionn", "none")
# Every compressor of golden.compressors, on its own collective over the process group.
METHODS = RING_METHODS + tuple(m for m in compressors.METHODS if m not in RING_METHODS)
_LAYERED = ("terngrad", "randomk", "blockk")   # take per-layer sizes: the bucket's parameters
_STATES = itertools.count()     # same order on every rank: a key prefix per state


def _default_host() -> str:
    if os.environ.get("INCEPTIONN_HOST"):
        return os.environ["INCEPTIONN_HOST"]
    master = os.environ.get("MASTER_ADDR", "127.0.0.1")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((master, 9))          # no packet is sent; picks the route's address
            return s.getsockname()[0]
        except OSError:
            return "127.0.0.1"


class IncState:
    """Everything the hook needs, in one object (as PowerSGDState is for PowerSGD).

    mode: "inc" (the ring) or "wa" (worker-aggregator, rank 0 aggregates).
    method: "inceptionn" (the NIC's codec at 2^-k: compress=True puts the data on tagged
    sockets for a real NIC, emulate=True applies the golden roundtrip in software) or
    "none" (the same exchange, no compression); or any other method of
    golden.compressors ("terngrad", "topk", "gtopk", "randomk", "blockk", "scalecom",
    "truncation", "inceptionn_eb"), with its parameters in `method_kw` (e.g. {"k": 0.01}),
    run on its own collective over the process group (drivers/collectives/compressed.py);
    mode, compress and emulate then do not apply. Compressor state (residuals, step) is
    kept per DDP bucket; `bytes_sent` counts this rank's payload bytes.
    """

    def __init__(self, process_group=None, *, mode: str = "inc", method: str = "inceptionn",
                 k: int = golden.K_DEFAULT, compress: bool = False, emulate: bool = True,
                 host: str | None = None, chunk: int = DEFAULT_CHUNK,
                 timeout: float = DEFAULT_TIMEOUT, method_kw: dict | None = None, seed: int = 0):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if method not in METHODS:
            raise ValueError(f"method {method!r} is not available in the hook; choose one of "
                             f"{METHODS}")
        self.method_kw, self.seed = dict(method_kw or {}), seed
        self._buckets: dict = {}
        self.bytes_sent = 0
        if method not in RING_METHODS:
            compressors.make(method, **self.method_kw)      # bad parameters fail here
        elif method == "inceptionn" and compress == emulate:
            raise ValueError("method 'inceptionn' needs exactly one of compress=True (a NIC "
                             "on the path) or emulate=True (software)")
        self.process_group, self.mode, self.method = process_group, mode, method
        self.k = golden.check_k(k)
        self.compress = compress and method == "inceptionn"
        self.emulate = emulate and method == "inceptionn"
        self.host, self.chunk, self.timeout = host, chunk, timeout
        self.prefix = f"inceptionn/hook/{next(_STATES)}"
        self.collective = None
        self.calls = 0

    def _setup(self):
        pg = self.process_group or dist.group.WORLD
        rank, world = dist.get_rank(pg), dist.get_world_size(pg)
        store = dist.distributed_c10d._get_default_store()
        cls = Ring if self.mode == "inc" else WorkerAggregator
        self.collective = cls.from_store(
            store, rank, world, host=self.host or _default_host(), prefix=self.prefix, k=self.k,
            compress=self.compress, emulate=self.emulate, chunk=self.chunk, timeout=self.timeout)
        self.world = world

    def close(self):
        if self.collective is not None:
            self.collective.close()
            self.collective = None


def _compressed(state: IncState, bucket, arr):
    """One step of a golden.compressors method for this bucket; the sum over ranks."""
    pg = state.process_group or dist.group.WORLD
    key = bucket.index()
    if key not in state._buckets:
        kw = dict(state.method_kw)
        if state.method in _LAYERED and "layers" not in kw:
            kw["layers"] = [p.numel() for p in bucket.parameters()]
        comp = compressors.make(state.method, **kw)
        state._buckets[key] = (comp, comp.init(arr.size, rank=dist.get_rank(pg),
                                               world=dist.get_world_size(pg), seed=state.seed))
    comp, st = state._buckets[key]
    total, st, sent = compressed_step(comp, arr, st, pg)
    state._buckets[key] = (comp, st)
    state.bytes_sent += sent
    state.world = dist.get_world_size(pg)
    return np.ascontiguousarray(total, np.float32)


def inc_allreduce_hook(state: IncState, bucket) -> torch.futures.Future[torch.Tensor]:
    """Average the bucket over all ranks through the ring (or the method's collective);
    a completed future."""
    buf = bucket.buffer()
    if buf.dtype != torch.float32:
        raise TypeError(f"the INCEPTIONN hook carries float32 gradients, got {buf.dtype}")
    arr = buf.detach().to("cpu", copy=True).numpy().reshape(-1)
    if state.method in RING_METHODS:
        if state.collective is None:
            state._setup()
        state.collective.allreduce(arr)
    else:
        arr = _compressed(state, bucket, arr)
    arr /= np.float32(state.world)
    state.calls += 1
    fut = torch.futures.Future()
    fut.set_result(torch.from_numpy(arr).to(buf.device).view_as(buf))
    return fut
