"""A PyTorch DDP communication hook that averages each gradient bucket through the
paper's ring, its values coded on every hop (or through a companion paper's compressor).

    import torch.distributed as dist
    from inceptionn.ddp_hook import IncState, inc_allreduce_hook

    dist.init_process_group("gloo")                      # torchrun sets the rendezvous
    model = DDP(model)
    model.register_comm_hook(IncState(), inc_allreduce_hook)

By default (`IncState()`) the bound follows the gradients' scale (each chunk scaled by
2^-s, s from its values, so a quarter of them or more are coded with bits; |error| <=
2^(s-10)), and what the codec drops is fed back into the next step (error feedback,
per parameter): docs/compressors.md, "Absolute or scale-following bound".

As PyTorch's own hooks do, the hook returns at once a Future that completes when the
bucket's exchange does; the exchange runs on one background worker per state, bucket
after bucket in DDP's order, so backward keeps computing the next buckets meanwhile.
Each bucket is copied to the host when the hook is called (for CUDA, an asynchronous copy
on the producing stream that the worker waits for); the worker never reads DDP's bucket.

The ring's sockets are set up once, on the worker, from the rendezvous store: `store=`,
or torchrun's (MASTER_ADDR / MASTER_PORT). Every rank's settings are compared there
first; a rank set up differently, or with no hook, is an error on every rank. Peers
prove the job's secret (drivers/collectives/transport.py: the trust model). Each rank
listens on `host=` (or INCEPTIONN_HOST; by default the address that reaches
MASTER_ADDR). The hook averages, like PyTorch's default all-reduce hook.
"""
# No `from __future__ import annotations`: DDP checks the hook's return annotation.

import itertools
import os
import queue
import socket
import threading
from dataclasses import replace

import numpy as np
import torch
import torch.distributed as dist

from . import golden
from .drivers import sockets
from .drivers.collectives import (DEFAULT_CHUNK, DEFAULT_TIMEOUT, CollectiveError, Ring,
                                  WorkerAggregator, make_codec)
from .drivers.collectives.agreement import agree_via_store
from .drivers.collectives.codecs import DEFAULT_SHARE, ScaledCodec
from .drivers.collectives.compressed import step as compressed_step
from .drivers.collectives.memory import LossRecorder, Memory
from .golden import compressors

__all__ = ["IncState", "inc_allreduce_hook", "METHODS", "MODES", "WIRES", "CODECS", "BOUNDS",
           "TRANSPORTS"]

MODES = ("inc", "wa")
WIRES = ("software", "nic", "emulate")
CODECS = ("bounded", "paper")
BOUNDS = ("scaled", "absolute")
# "socket": the ring on the project's sockets, coded on the host (golden.fast); "torch":
# the ring over the process group's point-to-point (NCCL or gloo), coded on the bucket's
# device (device_codec.py), so a CUDA bucket never leaves its GPU uncompressed.
TRANSPORTS = ("socket", "torch")
RING_METHODS = ("inceptionn", "none")
# Dense compressors on the ring whose loss the ring records like INCEPTIONN's (error
# feedback through the Memory object); off by default (docs/compressors.md, section 5).
_FED = ("truncation",)
# Every compressor of golden.compressors, on its own collective.
METHODS = RING_METHODS + tuple(m for m in compressors.METHODS if m not in RING_METHODS)
_DENSITY = ("topk", "gtopk", "randomk", "blockk", "scalecom")   # take a density
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


def _error_bound_k(bound) -> int:
    """k of an error bound 2^-k given as a number (0.0009765625, 2**-10) or text."""
    if isinstance(bound, bool) or not isinstance(bound, (int, float, str)):
        raise ValueError(f"error_bound must be 2^-k (a number or text), got {bound!r}")
    return golden.parse_error_bound(repr(float(bound)) if not isinstance(bound, str) else bound)


class IncState:
    """Everything the hook needs, in one object (as PowerSGDState is for PowerSGD).

    method: "inceptionn" (the ring, every hop coded) or "none" (the ring, float32); or a
    companion paper's compressor of golden.compressors ("terngrad", "topk", "gtopk",
    "randomk", "blockk", "scalecom", "truncation", "inceptionn_eb"): those summed
    element-wise ride the same ring with their own codec, the others (all-gathers,
    gTop-k's tree, the preludes) go over the process group.
    codec: "bounded" (inceptionn_eb: |error| < error_bound) or "paper" (the paper's
    codec, which drops values below 2^-7 whatever the bound).
    error_bound: 2^-k, as a number (2**-10) or text ("2^-10").
    bound: "scaled" (each chunk times 2^-s before coding, 2^s after, s from its values
    so that at least `share` of them are coded with bits: |error| <= 2^(s-k); the
    default for "inceptionn" with the bounded codec in mode "inc" on the socket
    transport, every wire: on "nic" and "emulate" the chunk crosses as float32 times
    2^-s, s on the control connection, and the NIC codes it at its fixed k) or
    "absolute" (|error| < error_bound whatever the gradients' scale: the paper's; the
    default elsewhere).
    error_feedback: keep what the codec dropped and add it to the next step, per
    parameter (drivers/collectives/memory.py); on by default with bound "scaled".
    Available for "inceptionn" in mode "inc" on the socket transport, every wire (on
    "nic" the sender computes its loss with the golden codec, which the engines match
    bit for bit; a segment the NIC sends uncompressed arrives exact, and its modelled
    loss is then fed back needlessly once); and for "truncation" (its codec on the
    ring, the same memory; off by default). The sparsifiers keep their own memory;
    "terngrad" has none.
    wire: "software" (the codec's bytes on plain sockets: the bytes are saved without a
    NIC), "nic" (float32 on tagged sockets, an INCEPTIONN NIC on the path codes them;
    the NIC's codec must be `codec`), or "emulate" (float32 on the wire, the roundtrip
    applied on receipt: the same numbers, no byte saved).
    mode: "inc" (the ring) or "wa" (worker-aggregator, rank 0 aggregates; nic/emulate).
    density: the fraction of values a sparsifier keeps (topk, gtopk, randomk, blockk,
    scalecom); method_kw: the method's other parameters.
    chunk_floats: floats per pipelined chunk; mss_bytes: the gradient sockets' MSS (nic);
    timeout_s: how long a silent peer is waited for; codec_threads: the software wire's
    codec threads. transport: "socket" (the project's sockets) or "torch" (the process
    group's point-to-point, the buckets coded on their device: method "inceptionn", wire
    "software", mode "inc" only). bytes_sent counts this rank's data bytes; hook_seconds the worker's
    time per bucket exchange.
    """

    def __init__(self, process_group=None, *, method: str = "inceptionn",
                 codec: str = "bounded", error_bound=2 ** -10, wire: str = "software",
                 mode: str = "inc", density: float | None = None, method_kw: dict | None = None,
                 chunk_floats: int = DEFAULT_CHUNK, mss_bytes: int = sockets.GRADIENT_MSS,
                 timeout_s: float = DEFAULT_TIMEOUT, host: str | None = None, store=None,
                 seed: int = 0, codec_threads: int | None = None, bound: str | None = None,
                 share: float = DEFAULT_SHARE, error_feedback: bool | None = None,
                 transport: str = "socket"):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if method not in METHODS:
            raise ValueError(f"method {method!r} is not available in the hook; choose one of "
                             f"{METHODS}")
        if codec not in CODECS:
            raise ValueError(f"codec must be one of {CODECS}, got {codec!r}")
        if wire not in WIRES:
            raise ValueError(f"wire must be one of {WIRES}, got {wire!r}")
        if mode == "wa" and wire == "software":
            raise ValueError("mode 'wa' carries float32 (wire 'nic' or 'emulate'), not the "
                             "software wire")
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {TRANSPORTS}, got {transport!r}")
        if transport == "torch" and (method, wire, mode) != ("inceptionn", "software", "inc"):
            raise ValueError("transport 'torch' carries method 'inceptionn' on wire 'software' "
                             f"in mode 'inc', not {method!r} / {wire!r} / {mode!r}")
        if not isinstance(chunk_floats, int) or chunk_floats < 1:
            raise ValueError(f"chunk_floats must be a positive int, got {chunk_floats!r}")
        kw = dict(method_kw or {})
        if "k" in kw:
            raise ValueError("method_kw has no 'k': give a sparsifier's fraction as density=, "
                             "an error bound as error_bound=")
        if density is not None:
            if method not in _DENSITY:
                raise ValueError(f"density applies to {_DENSITY}, not {method!r}")
            kw["k"] = float(density)
        elif method in _DENSITY:
            raise ValueError(f"method {method!r} needs density= (the fraction of values kept)")
        self.k = _error_bound_k(error_bound)
        self.bound, self.share, self.error_feedback = _bound_and_feedback(
            method, codec, wire, mode, bound, share, error_feedback, transport)
        self.memory = Memory() if self.error_feedback else None
        if method not in RING_METHODS:
            compressors.make(method, **kw)      # bad parameters fail here
        self.method_kw, self.seed = kw, seed
        self.process_group, self.mode, self.method = process_group, mode, method
        self.codec, self.wire = codec, wire
        self.host, self.store = host, store
        self.chunk, self.mss, self.timeout = chunk_floats, mss_bytes, timeout_s
        self.codec_threads = codec_threads
        self.transport = transport
        self.prefix = (f"inceptionn/hook/{os.environ.get('TORCHELASTIC_RESTART_COUNT', 0)}/"
                       f"{next(_STATES)}")
        self.collective = None
        self.calls = 0
        self.bytes_sent = 0
        self.hook_seconds: list[float] = []
        self._buckets = _BucketStates(self)
        self._worker = None
        self._failed: BaseException | None = None
        self.world = None

    def settings(self) -> dict:
        """What every rank must agree on."""
        ring = self.method in RING_METHODS
        params = {("density" if k == "k" else k): v for k, v in self.method_kw.items()}
        return {"method": self.method, "method_params": params,
                "codec": self.codec if self.method == "inceptionn" else None,
                "error_bound_log2": -self.k if self.method == "inceptionn" else None,
                "bound": self.bound, "share": self.share if self.bound == "scaled" else None,
                "error_feedback": self.error_feedback,
                "mode": self.mode if ring else None, "wire": self.wire if ring else None,
                "chunk_floats": self.chunk, "seed": self.seed, "transport": self.transport,
                "mss_bytes": self.mss if self.wire == "nic" else None}

    # ------------------------------------------------------------------ setup

    def _group(self):
        pg = self.process_group or dist.group.WORLD
        return pg, dist.get_rank(pg), dist.get_world_size(pg)

    def _the_store(self):
        if self.store is not None:
            return self.store
        addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        if not addr or not port:
            raise CollectiveError("no rendezvous store: pass IncState(store=...) or run under "
                                  "torchrun (MASTER_ADDR and MASTER_PORT)")
        import datetime
        try:
            return dist.TCPStore(addr, int(port), is_master=False, wait_for_workers=False,
                                 timeout=datetime.timedelta(seconds=self.timeout))
        except Exception as e:  # the store is not reachable
            raise CollectiveError(f"cannot reach the rendezvous store at {addr}:{port}: {e}") \
                from None

    def _setup(self):
        pg, rank, world = self._group()
        self.world = world
        if self.transport == "torch":
            self._setup_torch(pg, rank, world)
            return
        store = self._the_store()
        wire = self.wire if self.method == "inceptionn" else "software"
        if self.method == "none":
            wire = "plain"
        if self.mode == "wa" and self.method in RING_METHODS:
            agree_via_store(store, self.prefix, rank, world, self.settings(), self.timeout)
            self.collective = WorkerAggregator.from_store(
                store, rank, world, host=self.host or _default_host(), prefix=self.prefix,
                k=self.k, codec=self.codec, compress=wire == "nic", emulate=wire == "emulate",
                mss=self.mss,
                chunk=self.chunk, timeout=self.timeout)
            return
        codec = self.codec
        if self.bound == "scaled":
            codec = ScaledCodec(self.k, self.share)
        if self.method not in RING_METHODS:
            codec = compressors.make(self.method, **self._kw_for(None)).codec
        if self.memory is not None:
            codec = LossRecorder(make_codec(codec, self.k))
        self.collective = Ring.from_store(
            store, rank, world, host=self.host or _default_host(), prefix=self.prefix, k=self.k,
            codec=codec, wire=wire, mss=self.mss, chunk=self.chunk, timeout=self.timeout,
            codec_threads=self.codec_threads, settings=self.settings())

    def _setup_torch(self, pg, rank, world):
        """The ring over the process group; the settings compared over it too."""
        from .drivers.collectives.agreement import compare_settings
        from .drivers.collectives.torch_ring import TorchRing
        mine = self.settings()
        every: list = [None] * world
        dist.all_gather_object(every, mine, group=pg)
        compare_settings(dict(enumerate(every)))
        self.collective = TorchRing(pg, codec=self.codec, k=self.k, chunk=self.chunk,
                                    timeout=self.timeout)

    def _kw_for(self, layers):
        kw = dict(self.method_kw)
        if self.method in _LAYERED and "layers" not in kw and layers is not None:
            kw["layers"] = layers
        return kw

    # ------------------------------------------------------------------ the worker

    def _submit(self, item):
        if self._worker is None:
            self._q: queue.Queue = queue.Queue()
            self._worker = threading.Thread(target=self._run, name="inceptionn-hook",
                                            daemon=True)
            self._worker.start()
        self._q.put(item)

    def _run(self):
        import time
        while True:
            item = self._q.get()
            if item is None:
                return
            snap, device, params, fut, event = item
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
                if self.transport == "torch":     # on the bucket's device, in place
                    t = self._exchange_tensor(snap.view(-1)).view(snap.shape)
                else:
                    out = self._exchange(snap.numpy().reshape(-1), params)
                    out /= np.float32(self.world)
                    t = torch.from_numpy(out).view(snap.shape)
                self.calls += 1
                self.hook_seconds.append(time.perf_counter() - t0)
                fut.set_result(t if t.device == device else t.to(device))
            except BaseException as e:  # handed to DDP through the future
                if self._failed is None and self.collective is None:
                    _release_waiting_ranks(e, self.store)
                self._failed = self._failed or e
                if self.collective is not None:
                    self.collective.close()
                # DDP passes on the message only, so the message names the class.
                fut.set_exception(CollectiveError(f"inceptionn hook: {type(e).__name__}: {e}"))

    def _exchange(self, arr, params):
        # A dense compressor with error feedback (truncation) rides the ring as INCEPTIONN
        # does: its select and expand are the identity, so the ring sums the bucket itself.
        if self.method in RING_METHODS or self.memory is not None:
            before = self.collective.bytes_sent
            if self.memory is None:
                self.collective.allreduce(arr)
            else:       # compensate, exchange recording each hop's loss, keep it
                self.memory.compensate(arr, params)
                rec = self.collective.codec
                rec.start(arr)
                try:
                    self.collective.allreduce(arr)
                finally:
                    loss = rec.stop()
                self.memory.update(params, loss)
            self.bytes_sent += self.collective.bytes_sent - before
            return arr
        return self._buckets.step(arr, params)

    def _exchange_tensor(self, t):
        before = self.collective.bytes_sent
        self.collective.allreduce(t)
        self.bytes_sent += self.collective.bytes_sent - before
        t /= self.world
        if t.is_cuda:
            torch.cuda.current_stream(t.device).synchronize()   # final when the Future is set
        return t

    def close(self):
        if self._worker is not None:
            self._q.put(None)
            self._worker.join(self.timeout)
            self._worker = None
        if self.collective is not None:
            self.collective.close()
            self.collective = None


def _bound_and_feedback(method, codec, wire, mode, bound, share, feedback, transport):
    """The bound ("scaled" / "absolute") and whether error feedback is on: defaults where
    None, a clear error where the choice cannot apply. The ring scales and records its
    loss on every wire (software, nic, emulate: on the NIC path s rides the control
    connection and the sender models its engine's loss with the golden codec). The
    torch transport's device codec and the worker-aggregator code with the absolute
    bound and keep no memory (not built)."""
    coded_ring = method == "inceptionn" and mode == "inc" and transport == "socket"
    scalable = coded_ring and codec == "bounded"
    recordable = (coded_ring or method in _FED) and mode == "inc" and transport == "socket"
    if bound is None:
        bound = "scaled" if scalable else "absolute"
    if bound not in BOUNDS:
        raise ValueError(f"bound must be one of {BOUNDS}, got {bound!r}")
    if bound == "scaled" and not scalable:
        raise ValueError("bound='scaled' needs method 'inceptionn' with the bounded codec in "
                         "mode 'inc' on the socket transport (the paper's codec, mode 'wa' "
                         "and the torch transport take bound='absolute')")
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share!r}")
    if feedback is None:        # the absolute bound alone is the paper's exchange
        feedback = bound == "scaled"
    if feedback and not recordable:
        raise ValueError("error_feedback needs method 'inceptionn' or 'truncation' in mode "
                         "'inc' on the socket transport (elsewhere the codec's loss is not "
                         "seen on this rank; topk, gtopk, randomk, blockk and scalecom keep "
                         "their own memory; terngrad has none)")
    return bound, float(share), bool(feedback)


def _release_waiting_ranks(error, store) -> None:
    """The ring could not be set up (a peer never joined: no hook, or it died): a rank
    without the hook waits in gloo for this rank, so this process's connections but the
    store's are ended and that rank raises too (inceptionn/group_teardown.py). Not on a
    SettingsMismatch: every rank raises that itself, and the group stays usable."""
    from .drivers.collectives import SettingsMismatch
    from .group_teardown import shut_down_connections
    if isinstance(error, CollectiveError) and not isinstance(error, SettingsMismatch):
        shut_down_connections([os.environ.get("MASTER_PORT"), getattr(store, "port", None)])


class _BucketStates:
    """A compressor's state per bucket, keyed by the bucket's parameters (not by
    bucket.index(): DDP rebuilds its buckets after the first step, and the same index then
    names other parameters). A rebuilt bucket starts from the residual memory its
    parameters had in the buckets they came from."""

    def __init__(self, state):
        self.state = state
        self.entries: dict = {}      # key -> [comp, State, layout {param: (offset, n)}]
        self.owner: dict = {}        # param -> key of the entry holding its memory

    def step(self, arr, params):
        st = self.state
        pg, rank, world = st._group()
        key = tuple(params)
        if key not in self.entries:
            self._new(key, params, arr.size, rank, world)
        entry = self.entries[key]
        comp, cstate = entry[0], entry[1]
        total, cstate, sent = compressed_step(comp, arr, cstate, pg, ring=st.collective,
                                             timeout=st.timeout)
        entry[1] = cstate
        st.bytes_sent += sent
        return np.ascontiguousarray(total, np.float32)

    def _new(self, key, params, size, rank, world):
        layers = [n for _, n in params]
        comp = compressors.make(self.state.method, **self.state._kw_for(layers))
        cstate = comp.init(size, rank=rank, world=world, seed=self.state.seed)
        layout, off = {}, 0
        for p, n in params:
            layout[p] = (off, n)
            off += n
        if off != size:
            raise ValueError(f"the bucket's parameters hold {off} values, its buffer {size}")
        old = [self.entries[self.owner[p]] for p, _ in params if p in self.owner]
        if old:
            memory = np.zeros(size, np.float32)
            for p, (o, n) in layout.items():
                if p in self.owner:
                    prev = self.entries[self.owner[p]]
                    if prev[1].memory is not None:
                        po = prev[2][p][0]
                        memory[o:o + n] = prev[1].memory[po:po + n]
            # The step counts the exchanges (seeds and leaders follow it on every rank).
            cstate = replace(cstate, memory=memory if any(e[1].memory is not None for e in old)
                             else None, step=max(e[1].step for e in old))
        self.entries[key] = [comp, cstate, layout]
        for p in layout:
            self.owner[p] = key
        held = set(self.owner.values())
        for k in [k for k in self.entries if k not in held]:
            del self.entries[k]


def _param_key(p) -> tuple:
    """A parameter's identity and size: its storage address and element count."""
    return (p.data_ptr(), p.numel())


def inc_allreduce_hook(state: IncState, bucket) -> torch.futures.Future[torch.Tensor]:
    """Average the bucket over all ranks; returns a Future completed by the worker."""
    buf = bucket.buffer()
    if buf.dtype != torch.float32:
        raise TypeError(f"the INCEPTIONN hook carries float32 gradients, got {buf.dtype}")
    cuda = buf.device.type == "cuda"
    fut: torch.futures.Future[torch.Tensor] = (
        torch.futures.Future(devices=[buf.device]) if cuda else torch.futures.Future())
    # The worker exchanges a host snapshot taken now, never the bucket itself: DDP may
    # write the bucket's memory before the Future completes (seen on CPU: a bucket read
    # later by the worker held other values than at the call, in 3 test runs of 4).
    event = None
    if cuda and state.transport == "torch":     # stays on the GPU, coded there
        snap = buf.detach().clone()
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(buf.device))
    elif cuda:
        snap = torch.empty(buf.shape, dtype=buf.dtype, pin_memory=True)
        snap.copy_(buf.detach(), non_blocking=True)   # on the producing stream, in order
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(buf.device))
    else:
        snap = buf.detach().clone()
    params = [(_param_key(p), p.numel()) for p in bucket.parameters()]
    state._submit((snap, buf.device, params, fut, event))
    return fut
