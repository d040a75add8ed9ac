"""Simulated data-parallel training with exact wire bytes: P workers, one model.

Every worker holds the same weights (all apply the same aggregated update), so one
PyTorch model serves all of them. Each step, worker r draws a minibatch from its own
shard (training examples r, r + P, r + 2P, ...), its gradient (mean loss over its
batch) is computed for all workers at once (torch.func.vmap), flattened into the
float32 vector the compressor takes, and `collectives.run` plays the method's
collective for the P workers, each with its own compressor state (error-feedback
memory, step, seed). The aggregate SUM every rank receives, divided by P, is the
gradient the optimiser applies (SGD with momentum; weight decay applied locally, after
the exchange, as a DDP-style trainer does). The bytes are the collective's exact count
for every rank: payload bytes only, no frame headers.
"""

from __future__ import annotations

import math
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from inceptionn import golden
from inceptionn.golden.compression_block import check_k
from inceptionn.drivers.collectives.compressors import collectives, make

from .models import build, dataset, layer_sizes

__all__ = ["Scale", "FULL", "REDUCED", "Config", "Run", "cfg", "cost", "train", "run_all",
           "one_step_bytes", "stats", "paired"]


@dataclass(frozen=True)
class Scale:
    """How much the study runs: `FULL` for `make study`, `REDUCED` for `make test`."""
    seeds: tuple = (0, 1, 2)
    steps: int = 200            # LeNet-like runs
    hdc_steps: int = 60         # HDC runs (a 789,010-parameter MLP)
    workers: int = 4
    ps_train: tuple = (2, 4, 8)           # workers in the random-block P sweep
    ps_bytes: tuple = (2, 4, 8, 16, 32, 64)   # bytes-only simulations
    bytes_d: int = 100_000      # gradient size of the bytes-only simulations
    jobs: int = 2               # worker processes
    models: tuple = ("hdc", "lenet")          # Table III and Fig. 14
    data: tuple = ("digits", "mnist1d")       # TernGrad and the ScaleCom filter

    @property
    def name(self) -> str:
        return "full" if self == FULL else "reduced"


FULL = Scale()
REDUCED = Scale(seeds=(0,), steps=60, hdc_steps=8, ps_train=(), ps_bytes=(2, 4, 8, 16),
                bytes_d=20_000, jobs=1, models=("lenet",), data=("digits",))


@dataclass(frozen=True)
class Config:
    """One training run. Hashable, so runs shared by experiments are trained once."""
    method: str = "none"
    kw: tuple = ()              # compressor parameters, sorted (name, value) pairs
    layerwise: bool = False     # pass the model's layer sizes as `layers=`
    model: str = "lenet"
    data: str = "digits"
    workers: int = 4
    steps: int = 300
    batch: int = 32
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 5e-5
    seed: int = 0
    warmup: tuple = ()          # ((steps, density), ...) before kw's k (gTop-k's warm-up)
    bands: tuple = ()           # error bounds 2^-k whose band shares are recorded
    init: str = "he"            # "he" or "torch" (PyTorch's default, LeNet-like only)
    wire: str = "codec"         # "codec", or "frames": INCEPTIONN's chunks as the NIC's
                                # frames through golden.tx_frame / rx_frame (nic_path.py)
    reduction: str = "mean"     # the loss over the batch: "mean", or "sum" (the learning
                                # rate divided by the batch: the same update)

    def seeded(self, seed: int) -> "Config":
        return replace(self, seed=seed)

    def compressor(self, sizes, k=None):
        if self.method.startswith("hook-"):     # the DDP hook's exchange (hook_defaults.py)
            from .hook_defaults import HookExchange
            return HookExchange(self.method, sizes, self.workers)
        kw = dict(self.kw)
        if self.layerwise:
            kw["layers"] = list(sizes)
        if k is not None:
            kw["k"] = k
        if self.wire == "frames":
            if self.method not in NIC_CODECS:
                raise ValueError(f"wire='frames' carries INCEPTIONN's codecs only, not {self.method!r}")
            from .nic_path import FramesCodec
            kw["codec"] = FramesCodec(kw.get("k", 10), NIC_CODECS[self.method])
        elif self.wire != "codec":
            raise ValueError(f"wire must be 'codec' or 'frames', got {self.wire!r}")
        elif self.method == "inceptionn":
            kw["codec"] = FastGoldenCodec(kw.get("k", 10))
        return make(self.method, **kw)


# The NIC's wire format for each of the study's INCEPTIONN compressors.
NIC_CODECS = {"inceptionn": "paper", "inceptionn_eb": "bounded"}


class FastGoldenCodec:
    """INCEPTIONN's codec through the golden model's compiled path: the same bytes and
    decoded values as the NumPy model the compressor uses (checked by the study's test),
    about four times faster on the HDC network's 789,010 values. The paper's codec (wire
    format version 1), named explicitly: the reproductions of the paper's tables use it,
    while the project's default elsewhere is the bounded codec."""

    def __init__(self, k: int):
        self.k = check_k(k)
        self.name = f"inc{self.k}"
        self._pack, self._unpack = golden.fast_pack_groups, golden.fast_unpack_groups

    def encode(self, v: np.ndarray) -> bytes:
        return self._pack(np.ascontiguousarray(v, dtype=np.float32).view(np.uint32), self.k,
                          codec="paper")

    def decode(self, buf: bytes, n: int) -> np.ndarray:
        bits, used, ok = self._unpack(buf, n, self.k, codec="paper")
        if not ok or used != len(buf):
            raise ValueError(f"{n} values do not fill the {len(buf)} bytes given")
        return np.asarray(bits, np.uint32).view(np.float32)


def cfg(method: str = "none", *, layerwise: bool = False, **kw) -> Config:
    """A Config from a method name, its compressor parameters and the run's settings."""
    fields = set(Config.__dataclass_fields__) - {"method", "kw", "layerwise"}
    run = {k: kw.pop(k) for k in list(kw) if k in fields}
    return Config(method=method, kw=tuple(sorted(kw.items())), layerwise=layerwise, **run)


@dataclass
class Run:
    config: Config
    accuracy: float             # test accuracy after the last step
    sent: float                 # bytes sent per worker per step (mean over workers, steps)
    sent_max: float             # the busiest worker's bytes per step (mean over steps)
    d: int                      # gradient size (values)
    losses: list = field(default_factory=list)   # per step: mean training loss of the workers
    curve: list = field(default_factory=list)    # (step, test accuracy)
    shares: dict = field(default_factory=dict)   # k -> {code bits: share}, mean over samples
    trace: list = field(default_factory=list)    # (step, {k: 2-bit share}) per sample
    seconds: float = 0.0
    diverged: bool = False      # the aggregate left the float range at some step

    @property
    def dense_bytes(self) -> int:
        return 4 * self.d

    @property
    def ratio(self) -> float:
        """Against the float32 ring all-reduce's bytes, 2 (P - 1) / P * 4d per worker."""
        p = self.config.workers
        return 2 * (p - 1) / p * self.dense_bytes / self.sent if self.sent else math.inf


def _accuracy(net, data) -> float:
    with torch.no_grad():
        return float((net(data.xte).argmax(1) == data.yte).float().mean())


def _lr_at(c: Config, step: int) -> float:
    """Constant, divided by 5 for the last third (INCEPTIONN's HDC schedule, shortened)."""
    return c.lr / 5 if step >= 2 * c.steps // 3 else c.lr


def train(c: Config) -> Run:
    """Train one configuration; test accuracy, exact bytes, losses and band shares."""
    t0 = time.perf_counter()
    torch.set_num_threads(1)
    data = dataset(c.data)
    net = build(c.model, data, c.seed, c.init)
    names = [n for n, _ in net.named_parameters()]
    sizes = layer_sizes(net)
    d, p = int(sum(sizes)), c.workers
    comps, until = [], []
    for n, density in c.warmup:
        comps.append(c.compressor(sizes, k=density))
        until.append(n)
    comps.append(c.compressor(sizes))
    hook = comps[-1] if c.method.startswith("hook-") else None
    states = None if hook else [comps[-1].init(d, rank=r, world=p, seed=c.seed)
                                for r in range(p)]
    if c.reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum', got {c.reduction!r}")
    opt = torch.optim.SGD(net.parameters(), lr=c.lr, momentum=c.momentum,
                          weight_decay=c.weight_decay)

    def loss_fn(params, x, y):
        return nn.functional.cross_entropy(functional_call(net, params, (x,)), y,
                                           reduction=c.reduction)
    per_worker = vmap(grad_and_value(loss_fn), in_dims=(None, 0, 0))
    gen = torch.Generator().manual_seed(c.seed)
    shards = torch.stack([torch.arange(r, r + p * (data.xtr.shape[0] // p), p)
                          for r in range(p)])
    every = max(1, c.steps // 10)
    sent, sent_max, losses, curve, samples, diverged = 0.0, 0.0, [], [], [], False
    for step in range(c.steps):
        pick = torch.randint(0, shards.shape[1], (p, c.batch), generator=gen)
        idx = torch.gather(shards, 1, pick)
        params = {n: q.detach() for n, q in net.named_parameters()}
        g, loss = per_worker(params, data.xtr[idx], data.ytr[idx])
        flat = torch.cat([g[n].reshape(p, -1) for n in names], 1).numpy()
        grads = [np.ascontiguousarray(flat[r], dtype=np.float32) for r in range(p)]
        if c.bands and step % every == 0:
            samples.append({k: golden.band_stats(grads[0], k, "paper").share for k in c.bands})
        comp = comps[sum(step >= u for u in np.cumsum(until))] if until else comps[-1]
        with np.errstate(all="ignore"):   # a diverging run is recorded, not warned about
            if hook is not None:
                total, rank_sent = hook.run(grads)
            else:
                ex = collectives.run(comp, grads, states)
                total, rank_sent, states = ex.results[0], ex.sent, ex.states
            agg = total / np.float32(p)
        sent += sum(rank_sent) / p
        sent_max += max(rank_sent)
        if not np.isfinite(agg).all():
            diverged = True
            agg = np.zeros_like(agg)       # the weights stay where they were
        mean = torch.from_numpy(agg)
        off = 0
        for q, n in zip(net.parameters(), sizes):
            q.grad = mean[off:off + n].view_as(q).clone()
            off += n
        for group in opt.param_groups:
            group["lr"] = _lr_at(c, step) / (c.batch if c.reduction == "sum" else 1)
        opt.step()
        losses.append(float(loss.mean()) / (c.batch if c.reduction == "sum" else 1))
        if (step + 1) % every == 0 or step == c.steps - 1:
            curve.append((step + 1, _accuracy(net, data)))
    shares = {k: {b: float(np.mean([s[k][b] for s in samples])) for b in samples[0][k]}
              for k in c.bands}
    trace = [(i * every, {k: s[k][2] for k in c.bands}) for i, s in enumerate(samples)]
    return Run(c, curve[-1][1], sent / c.steps, sent_max / c.steps, d, losses, curve, shares,
               trace, time.perf_counter() - t0, diverged)


def cost(c: Config) -> int:
    """Rough work of a run, in LeNet-like worker-steps (an HDC worker-step is about 8)."""
    return c.steps * c.workers * (8 if c.model == "hdc" else 1)


def _train_quiet(c: Config) -> Run:
    torch.set_num_threads(1)
    return train(c)


def run_all(configs, jobs: int = 1, tick=None) -> dict:
    """Train every distinct configuration once (in `jobs` processes); tick(cost) after
    each run. Returns {Config: Run}."""
    todo = sorted(set(configs), key=cost, reverse=True)
    out = {}
    if jobs <= 1:
        threads = torch.get_num_threads()
        try:
            for c in todo:
                out[c] = train(c)
                if tick:
                    tick(cost(c))
        finally:
            torch.set_num_threads(threads)   # train() runs single-threaded
        return out
    import multiprocessing as mp
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn")) as pool:
        futs = {pool.submit(_train_quiet, c): c for c in todo}
        for f in as_completed(futs):
            out[futs[f]] = f.result()
            if tick:
                tick(cost(futs[f]))
    return out


def one_step_bytes(method: str, d: int, p: int, seed: int = 0, **kw) -> dict:
    """One exchange of P random N(0, 1) gradients of d values: bytes each rank sent."""
    rng = np.random.default_rng([seed, p])
    grads = [rng.standard_normal(d).astype(np.float32) for _ in range(p)]
    comp = make(method, **kw)
    states = [comp.init(d, rank=r, world=p, seed=seed) for r in range(p)]
    ex = collectives.run(comp, grads, states)
    return {"mean": sum(ex.sent) / p, "max": max(ex.sent), "recv_max": max(ex.recv)}


def stats(vals) -> tuple:
    """(mean, sample standard deviation) of a list; sd 0 for one value."""
    a = np.asarray(vals, float)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


def paired(runs_a, runs_b) -> tuple:
    """Accuracy of a minus b, paired by seed (same initialisation and batches): (mean, sd)."""
    return stats([a.accuracy - b.accuracy for a, b in zip(runs_a, runs_b)])


# ---------------------------------------------------------------- the study's settings

def epoch_steps(c: Config) -> int:
    """Steps in one pass over the training set by all P workers together."""
    return -(-dataset(c.data).xtr.shape[0] // (c.workers * c.batch))


def lenet(scale: Scale, method: str = "none", **kw) -> Config:
    """The LeNet-like CNN on digits (unless data= says otherwise): lr 0.05, momentum 0.9."""
    kw.setdefault("steps", scale.steps)
    kw.setdefault("workers", scale.workers)
    return cfg(method, **kw)


def hdc(scale: Scale, method: str = "none", **kw) -> Config:
    """The paper's HDC network on digits with its Table I settings: batch 25, lr 0.1,
    momentum 0.9, weight decay 5e-5."""
    return cfg(method, model="hdc", batch=25, lr=0.1, steps=scale.hdc_steps,
               workers=scale.workers, **kw)


class Group:
    """The runs of one configuration over the scale's seeds."""

    def __init__(self, runs: dict, c: Config, scale: Scale):
        self.config = c
        self.runs = [runs[c.seeded(s)] for s in scale.seeds]

    @property
    def acc(self) -> tuple:
        return stats([r.accuracy for r in self.runs])

    @property
    def sent(self) -> float:
        return float(np.mean([r.sent for r in self.runs]))

    @property
    def sent_max(self) -> float:
        return float(np.mean([r.sent_max for r in self.runs]))

    @property
    def ratio(self) -> float:
        return float(np.mean([r.ratio for r in self.runs]))

    @property
    def loss(self) -> tuple:
        """Training loss over the last tenth of the steps (inf where it is not finite)."""
        n = max(1, len(self.runs[0].losses) // 10)
        vals = [float(np.mean(r.losses[-n:])) for r in self.runs]
        vals = [v if math.isfinite(v) else math.inf for v in vals]
        return (math.inf, 0.0) if math.inf in vals else stats(vals)

    @property
    def diverged(self) -> int:
        return sum(r.diverged for r in self.runs)

    def minus(self, other: "Group") -> tuple:
        """Accuracy against another group, paired by seed."""
        return paired(self.runs, other.runs)


def seeded(configs, scale: Scale) -> list:
    return [c.seeded(s) for c in configs for s in scale.seeds]


def pct(ms: tuple, digits: int = 1) -> str:
    """'97.8 ± 0.4' from a (mean, sd) of fractions, in percent."""
    m, sd = ms
    return f"{100 * m:.{digits}f} ± {100 * sd:.{digits}f}"


def signed(ms: tuple, digits: int = 1) -> str:
    m, sd = ms
    return f"{100 * m:+.{digits}f} ± {100 * sd:.{digits}f}"


def loss_str(ms: tuple) -> str:
    """A (mean, sd) training loss for a table; 'diverged' where it is not finite."""
    return f"{ms[0]:.3f}" if math.isfinite(ms[0]) else "diverged"
