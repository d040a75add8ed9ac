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

`IncState` is settings only (as PyTorch's PowerSGDState); what runs lives in its
`HookWorker`: the sockets, the thread, the per-bucket compressor states and the rank's
error-feedback memory. Its `state_dict()` is the rank's training state as data (the
residuals per parameter and what else carries from step to step; hook_state.py), saved
with the model and loaded before the first step of a resumed run.
As PyTorch's own hooks do, the hook returns at once a Future that completes when the
bucket's exchange does; the exchange runs on the worker's
thread, bucket after bucket in DDP's order, so backward keeps computing the next
buckets meanwhile.
Each bucket is copied to the host when the hook is called (for CUDA, an asynchronous copy
on the producing stream that the worker waits for); the worker never reads DDP's bucket.
A bucket on a plain path (the group's float32 or fp16 all-reduce) is all-reduced from
the hook's call instead, as torch's own hooks (hook_direct.py).

The ring's sockets are set up once, on the worker, from the rendezvous store: `store=`,
or torchrun's (MASTER_ADDR / MASTER_PORT). Every rank's settings are compared there
first; a rank set up differently, or with no hook, is an error on every rank. Peers
prove the job's secret (drivers/collectives/transports/links.py: the trust model). Each rank
listens on `host=` (or INCEPTIONN_HOST; by default the address that reaches
MASTER_ADDR). The hook averages, like PyTorch's default all-reduce hook.
"""
# No `from __future__ import annotations`: DDP checks the hook's return annotation.

import itertools
import os
import time

import torch

from .. import sockets
from . import DEFAULT_TIMEOUT, compressors, make_codec
from .codecs import DEFAULT_SHARE
from . import hook_options, hook_state
from .decide import DECIDES
from .hook_direct import issue_direct
from .hook_options import BOUNDS, CODECS, METHODS, MODES, TRANSPORTS, WIRES
from .hook_worker import HookWorker
from .memory import LossRecorder, Memory

__all__ = ["IncState", "inc_allreduce_hook", "METHODS", "MODES", "WIRES", "CODECS", "BOUNDS",
           "TRANSPORTS", "DECIDES", "DTYPES"]

# The bucket dtypes the hook takes: 16-bit buckets are widened to float32 for the
# exchange (losslessly: every bfloat16 and float16 value is a float32) and the average
# narrowed back (docs/compressors.md, "Buckets of other dtypes").
DTYPES = (torch.float32, torch.bfloat16, torch.float16)
_STATES = itertools.count()     # same order on every rank: a key prefix per state


class IncState:
    """The hook's settings, in one object (as PowerSGDState is for PowerSGD); what runs
    (sockets, thread, per-bucket state, error-feedback memory) is its `worker`.

    method: "inceptionn" (the ring, every hop coded) or "none" (the ring, float32); or a
    companion paper's compressor of compressors/ ("terngrad", "topk", "gtopk",
    "randomk", "blockk", "scalecom", "truncation", "inceptionn_eb"): those summed
    element-wise ride the same ring with their own codec, the others (all-gathers,
    gTop-k's tree, the preludes) go over the process group.
    codec: "bounded" (inceptionn_eb: |error| < error_bound) or "paper" (the paper's
    codec, which drops values below 2^-7 whatever the bound).
    error_bound: 2^-k, as a number (2**-10) or text ("2^-10").
    bound: "scaled" (each chunk times 2^-s before coding, 2^s after, s from its values
    so that at least `share` of them are coded with bits: |error| <= 2^(s-k); the
    default for "inceptionn" with the bounded codec in mode "inc", on every wire and
    both transports: on "nic" and "emulate" the chunk crosses as float32 times 2^-s, s
    on the control connection, and the NIC codes it at its fixed k; on the torch
    transport s is the first byte of each coded chunk) or "absolute" (|error| <
    error_bound whatever the gradients' scale: the paper's; the default elsewhere).
    error_feedback: keep what the exchange dropped and add it to the next step, per
    parameter (drivers/collectives/memory.py); on by default with bound "scaled" on the
    socket transport. For "inceptionn" in mode "inc" on the socket transport, every
    wire (on "nic" the sender computes its loss with the golden codec, which the
    engines match bit for bit; a segment the NIC sends uncompressed arrives exact, and
    its modelled loss is then fed back needlessly once); for the dense compressors on
    the ring ("truncation", "inceptionn_eb"; off by default); for "terngrad" (off by
    default: docs/compressors.md, measured). The sparsifiers' memory is part of their
    method (always on, the same Memory object).
    wire: "software" (the codec's bytes on plain sockets: the bytes are saved without a
    NIC), "nic" (float32 on tagged sockets, an INCEPTIONN NIC on the path codes them;
    the NIC's codec must be `codec`), or "emulate" (float32 on the wire, the roundtrip
    applied on receipt: the same numbers, no byte saved).
    mode: "inc" (the ring) or "wa" (worker-aggregator, rank 0 aggregates; nic/emulate).
    density: the fraction of values a sparsifier keeps (the methods that need "k");
    method_kw: the method's other parameters.
    chunk_floats: floats per pipelined chunk (default: 2^18 on the sockets, coded in
    frames of 2^16, each with its own scale: socket_ring._piece; 2^22 on the torch
    transport, where each round costs kernel launches and syncs whatever its size); mss_bytes: the gradient sockets' MSS (nic);
    timeout_s: how long a silent peer is waited for; codec_threads: the software wire's
    codec threads. transport: "socket" (the project's sockets) or "torch" (the process
    group's point-to-point, the buckets coded on their device: method "inceptionn", wire
    "software", mode "inc" only). bytes_sent counts this rank's data bytes (for a bucket
    handed to the process group's all-reduce: the bytes a ring all-reduce of its float32
    values sends); hook_seconds the worker's time per bucket exchange.
    decide: "auto" (each bucket on the ring, the process group's own all-reduce or its
    fp16 all-reduce: every bucket on one, or each on its own fastest, whichever gives
    the shortest training step as the hook measures them, agreed by every rank:
    decide.py; the default for "inceptionn" in mode "inc" on wire "software"), "ring"
    (always coded), "allreduce" (always the group's float32
    all-reduce, the residual added in) or "fp16" (always the group's float16 all-reduce,
    the residual added in, its rounding not kept: fp16.py says why). A plain bucket
    with no residual, or any CPU bucket, is all-reduced from the hook's call, as torch's
    own hooks (hook_direct.py).
    `schedule` reads the decision and the step times, `decisions` each bucket's path
    and exchange times.
    """

    def __init__(self, process_group=None, *, method: str = "inceptionn",
                 codec: str = "bounded", error_bound=2 ** -10, wire: str = "software",
                 mode: str = "inc", density: float | None = None, method_kw: dict | None = None,
                 chunk_floats: int | None = None, mss_bytes: int = sockets.GRADIENT_MSS,
                 timeout_s: float = DEFAULT_TIMEOUT, host: str | None = None, store=None,
                 seed: int = 0, codec_threads: int | None = None, bound: str | None = None,
                 share: float = DEFAULT_SHARE, error_feedback: bool | None = None,
                 transport: str = "socket", decide: str | None = None):
        o = hook_options.resolve(
            method=method, codec=codec, error_bound=error_bound, wire=wire, mode=mode,
            density=density, method_kw=method_kw, chunk_floats=chunk_floats, bound=bound,
            share=share, error_feedback=error_feedback, transport=transport, decide=decide)
        self.k, self.bound, self.share = o.k, o.bound, o.share
        self.error_feedback, self.ring_native, self.ring_fed = (o.error_feedback,
                                                                o.ring_native, o.ring_fed)
        self.decide, self.method_kw, self.chunk, self.seed = o.decide, o.method_kw, o.chunk, seed
        self.process_group, self.mode, self.method = process_group, mode, method
        self.codec, self.wire = codec, wire
        self.host, self.store = host, store
        self.mss, self.timeout = mss_bytes, timeout_s
        self.codec_threads = codec_threads
        self.transport = transport
        self._kwargs = dict(method=method, codec=codec, error_bound=error_bound, wire=wire,
                            mode=mode, density=density, method_kw=method_kw,
                            chunk_floats=o.chunk, mss_bytes=mss_bytes,
                            timeout_s=timeout_s, host=host, seed=seed,
                            codec_threads=codec_threads, bound=bound, share=share,
                            error_feedback=error_feedback, transport=transport,
                            decide=decide)
        self.prefix = (f"inceptionn/hook/{os.environ.get('TORCHELASTIC_RESTART_COUNT', 0)}/"
                       f"{next(_STATES)}")
        self.worker = HookWorker(self)

    def settings(self) -> dict:
        """What every rank must agree on."""
        ring = self.ring_native
        coded = "codec" in compressors.needs(self.method)
        params = {("density" if k == "k" else k): v for k, v in self.method_kw.items()
                  if k != "feedback"}
        return {"method": self.method, "method_params": params,
                "codec": self.codec if coded else None,
                "error_bound_log2": -self.k if coded else None,
                "bound": self.bound, "share": self.share if self.bound == "scaled" else None,
                "error_feedback": self.error_feedback,
                "mode": self.mode if ring else None, "wire": self.wire if ring else None,
                "chunk_floats": self.chunk, "seed": self.seed, "transport": self.transport,
                "mss_bytes": self.mss if self.wire == "nic" else None,
                "decide": self.decide}

    # The training state (drivers/collectives/hook_state.py), as PowerSGDState's.
    def state_dict(self) -> dict:
        """This rank's state: error-feedback residuals per parameter, the compressors'
        steps, the bucket layout, the counters, the settings, the world size and rank.
        Take it between steps (after backward returns); save it with the model's."""
        return hook_state.save(self.worker)

    def load_state_dict(self, state: dict) -> None:
        """Restore a state_dict() before the first step; refused (ValueError) where the
        settings, the world size, the rank or the model's parameters differ."""
        hook_state.load(self.worker, state)

    def __getstate__(self):
        # No socket, thread, store or process group: the settings and the state.
        kw = dict(self._kwargs)
        return {"kwargs": kw, "state": self.state_dict()}

    def __setstate__(self, pickled):
        # As PowerSGDState: the default process group, set up afresh on first use.
        self.__init__(**pickled["kwargs"])
        self.load_state_dict(pickled["state"])

    def ring_codec(self):
        """The ring's codec: the method's, recording each hop's loss where the ring feeds
        the error-feedback memory."""
        codec = make_codec(self.compressor().codec, self.k)
        return LossRecorder(codec) if self.ring_fed else codec

    def compressor(self, layers=None):
        """The method's compressor for a bucket whose parameters have these sizes."""
        kw = dict(self.method_kw)
        takes = compressors.needs(self.method)
        if "layers" in takes and "layers" not in kw and layers is not None:
            kw["layers"] = layers
        if "codec" in takes:
            kw.update(k=self.k, codec=self.codec, bound=self.bound, share=self.share)
        return compressors.make(self.method, **kw)

    # What the worker counts, where users read it.
    @property
    def bytes_sent(self) -> int:
        return self.worker.bytes_sent

    @property
    def calls(self) -> int:
        return self.worker.calls

    @property
    def hook_seconds(self) -> list[float]:
        return self.worker.hook_seconds

    @property
    def decisions(self) -> list[dict]:
        """Per bucket: its parameters' keys, the path the decided config gives it
        ("ring" / "allreduce" / "fp16"), its own fastest (`fastest`: its path in the
        "mix"), the seconds per exchange this rank measured on each path and the last
        agreed ones (the slowest rank's), the exchanges taken on each path (decide.py;
        the config: `schedule`)."""
        return self.worker.decisions.report()

    def pause_clock(self) -> None:
        """Call between steps where the time until the next one is not training (an
        evaluation, a checkpoint): the step that holds that time (the next, timed from
        the end of the last exchange) is not timed, so it cannot sway the decision
        (decide.py compares the paths by the steps they give)."""
        self.worker.decisions.pause()

    @property
    def schedule(self) -> dict:
        """The decision's schedule (decide="auto"): the step under way, the config decided
        ("ring", "allreduce", "fp16": every bucket on it; "mix": each bucket on its own
        fastest), the step at which the ranks next agree, the step seconds this rank
        measured per config and the last agreed ones (the slowest rank's), the steps
        taken per config (decide.py)."""
        return self.worker.decisions.steps.as_dict()

    @property
    def memory(self) -> Memory | None:
        """This rank's error-feedback memory (None: the exchange keeps none)."""
        return self.worker.memory

    @property
    def collective(self):
        return self.worker.collective

    def close(self):
        self.worker.close()


def inc_allreduce_hook(state: IncState, bucket) -> torch.futures.Future[torch.Tensor]:
    """Average the bucket over all ranks; returns a Future completed by the worker."""
    buf = bucket.buffer()
    if buf.dtype not in DTYPES:
        raise TypeError(f"the INCEPTIONN hook carries float32, bfloat16 and float16 "
                        f"gradients, got {buf.dtype}")
    params = state.worker.keys.of(bucket.parameters())
    # the step clock the decision compares paths by (decide.py)
    state.worker.decisions.begin(tuple(params),
                                 bucket.index() if hasattr(bucket, "index") else None)
    direct = issue_direct(state.worker, buf, params)   # a plain path: gloo's own cost
    if direct is not None:
        return direct
    fut: torch.futures.Future[torch.Tensor] = (
        torch.futures.Future(devices=[buf.device]) if buf.device.type == "cuda"
        else torch.futures.Future())
    t0 = time.perf_counter()
    snap, event, compensated = state.worker.snapshot(bucket, buf, fut, params)
    # the snapshot's pass is the worker's paths' cost too (decide.py compares like with like)
    state.worker.submit((snap, buf.device, buf.dtype, params, fut, event, compensated,
                         time.perf_counter() - t0))
    return fut
