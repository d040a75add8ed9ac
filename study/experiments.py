"""Every claim of the study: what is trained or simulated, over how many seeds.

Each experiment returns rows (dicts) with the measured mean and spread next to the
paper's number; report.py writes them out. `Scale` sets steps, seeds and sizes, so the
same code serves `make study` and the reduced run in `make test`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from inceptionn.golden import compressors as C
from inceptionn.golden.compressors import collectives

from .harness import train

__all__ = ["Scale", "FULL", "QUICK", "EXPERIMENTS", "mean_spread", "alpha_beta_time"]


@dataclass(frozen=True)
class Scale:
    seeds: tuple = (0, 1, 2)
    steps: int = 150            # LeNet runs
    hdc_steps: int = 60         # HDC runs (a 789k-parameter MLP)
    workers: int = 4
    ps: tuple = (2, 4, 8, 16, 32, 64)


FULL = Scale()
QUICK = Scale(seeds=(0,), steps=100, hdc_steps=15, ps=(2, 4, 8, 16))


def mean_spread(vals):
    a = np.asarray(vals, float)
    return float(a.mean()), float(a.max() - a.min()) if a.size > 1 else 0.0


def _runs(model, data, make, scale, progress, **kw):
    steps = scale.hdc_steps if model == "hdc" else scale.steps
    return [train(model, data, make, workers=scale.workers, steps=steps, seed=s,
                  progress=progress, **kw) for s in scale.seeds]


def _row(name, runs, base_bytes, **extra):
    acc, acc_sp = mean_spread([r.accuracy for r in runs])
    b = float(np.mean([r.bytes_per_step for r in runs]))
    return dict(method=name, accuracy=acc, spread=acc_sp, bytes=b, ratio=base_bytes / b, **extra)


# ------------------------------------------------------------------ INCEPTIONN

def table3(scale, progress):
    """Table III: code shares of HDC gradients while training with INC(2^-10)."""
    runs = _runs("hdc", "digits", lambda s: C.make("inceptionn", k=10), scale, progress,
                 band_ks=(10, 8, 6))
    paper = {10: (92.0, 6.5, 1.5, 0.0), 8: (95.7, 3.4, 0.9, 0.0), 6: (98.1, 1.6, 0.4, 0.0)}
    rows = []
    for k in (10, 8, 6):
        shares = [np.mean([r.shares[k][b] for r in runs]) * 100 for b in (2, 10, 18, 34)]
        rows.append(dict(bound=f"2^-{k}", ours=shares, paper=paper[k]))
    return rows


def fig14(scale, progress):
    """Fig. 14: accuracy and bytes, truncation of 16/22/24 LSBs against INC bounds."""
    methods = [("base (float32 ring)", lambda s: C.make("none"))]
    methods += [(f"{b}b-T", lambda s, b=b: C.make("truncation", bits=b)) for b in (16, 22, 24)]
    methods += [(f"INC 2^-{k}", lambda s, k=k: C.make("inceptionn", k=k)) for k in (10, 8, 6)]
    out, base = [], None
    for name, make in methods:
        runs = _runs("lenet", "digits", make, scale, progress)
        base = base or float(np.mean([r.bytes_per_step for r in runs]))
        out.append(_row(name, runs, base))
    return out


# ------------------------------------------------------------------ the companions

def terngrad(scale, progress):
    """TernGrad on the LeNet-like model: accuracy next to dense SGD, and the bytes."""
    out = []
    for data in ("digits", "mnist1d"):
        dense = _runs("lenet", data, lambda s: C.make("none"), scale, progress)
        base = float(np.mean([r.bytes_per_step for r in dense]))
        out.append(_row("dense SGD", dense, base, data=data))
        tern = _runs("lenet", data, lambda s: C.make("terngrad", layers=s), scale, progress)
        out.append(_row("TernGrad", tern, base, data=data))
    return out


def _one_step_bytes(comp, d, p, seed=0):
    rng = np.random.default_rng(seed)
    grads = [rng.normal(0, 1, d).astype(np.float32) for _ in range(p)]
    states = [comp.init(d, rank=r, world=p, seed=seed) for r in range(p)]
    ex = collectives.run(comp, grads, states)
    return max(ex.sent), max(ex.recv)


def gtopk_bytes(scale, progress):
    """Bytes per worker (the busiest) against P: top-k's all-gather O(kP), gTop-k's tree
    O(k log P); one step on d = 100,000 values, k = 1%."""
    d, rows = 100_000, []
    for p in scale.ps:
        t = _one_step_bytes(C.make("topk", k=0.01), d, p)
        g = _one_step_bytes(C.make("gtopk", k=0.01), d, p)
        rows.append(dict(P=p, topk_sent=t[0], topk_recv=t[1], gtopk_sent=g[0], gtopk_recv=g[1],
                         k=1000))
        if progress:
            progress()
    return rows


def gtopk_convergence(scale, progress):
    out = []
    dense = _runs("lenet", "digits", lambda s: C.make("none"), scale, progress)
    base = float(np.mean([r.bytes_per_step for r in dense]))
    out.append(_row("dense", dense, base))
    for density in (0.1, 0.01):
        for name in ("topk", "gtopk"):
            runs = _runs("lenet", "digits", lambda s, n=name, k=density: C.make(n, k=k), scale,
                         progress)
            out.append(_row(f"{name} {density:.0%}", runs, base))
    return out


def random_block(scale, progress):
    """The random-block paper's Table 1 in shape: layer-wise against global selection,
    shared seed + all-reduce against own seeds + all-gather, block against random-k.
    Learning rate 0.01 (a fifth of the others'): at 0.05 none of them trains in 150 steps."""
    out = []
    dense = _runs("lenet", "digits", lambda s: C.make("none"), scale, progress)
    base = float(np.mean([r.bytes_per_step for r in dense]))
    out.append(_row("dense", dense, base))
    for block in (True, False):
        for scope in ("layer", "global"):
            for shared in (True, False):
                name = (f"{'block' if block else 'random'}-k {scope} "
                        f"{'all-reduce' if shared else 'all-gather'}")
                make = (lambda s, b=block, sc=scope, sh=shared:
                        C.make("blockk" if b else "randomk", k=0.1, layers=s, scope=sc, shared=sh))
                out.append(_row(name, _runs("lenet", "digits", make, scale, progress, lr=RB_LR),
                                base))
    return out


RB_LR = 0.01


def random_block_bytes(scale, progress):
    d, rows = 100_000, []
    for p in scale.ps:
        ar = _one_step_bytes(C.make("randomk", k=0.01, shared=True), d, p)[0]
        ag = _one_step_bytes(C.make("randomk", k=0.01, shared=False), d, p)[0]
        rows.append(dict(P=p, allreduce=ar, allgather=ag))
    return rows


def scalecom(scale, progress):
    d, rows = 100_000, []
    for p in scale.ps:
        rows.append(dict(P=p, scalecom=_one_step_bytes(C.make("scalecom", k=0.01), d, p)[0],
                         topk=_one_step_bytes(C.make("topk", k=0.01), d, p)[0]))
    return rows


def scalecom_filter(scale, progress):
    """ScaleCom with the learning rate scaled up (x1.5): the low-pass filter (beta = 0.1)
    against plain error feedback (beta = 1)."""
    out = []
    dense = _runs("lenet", "digits", lambda s: C.make("none"), scale, progress, lr=0.075)
    base = float(np.mean([r.bytes_per_step for r in dense]))
    out.append(_row("dense, lr x1.5", dense, base))
    for beta in (1.0, 0.1):
        runs = _runs("lenet", "digits", lambda s, b=beta: C.make("scalecom", k=0.01, beta=b),
                     scale, progress, lr=0.075)
        out.append(_row(f"CLT-k 1%, beta = {beta}", runs, base))
    return out


# ------------------------------------------------------------------ summary

LINKS = {"10G": (5e-6, 8 / 10e9), "1G": (50e-6, 8 / 1e9)}   # alpha (s), beta (s/byte)


def alpha_beta_time(collective, p, dense_bytes, payload_bytes, link):
    """Modelled exchange time of one step: ring all-reduce 2(P-1)(a + n/P b); all-gather
    (P-1)(a + m b); gTop-k tree 2 log2 P (a + m b); n the bytes each worker contributes,
    m one worker's payload."""
    a, b = LINKS[link]
    if collective in ("allreduce", "ring_inc"):
        return 2 * (p - 1) * (a + payload_bytes / p * b)
    if collective == "allgather":
        return (p - 1) * (a + payload_bytes * b)
    return 2 * math.log2(p) * (a + payload_bytes * b)


SUMMARY = [("dense (float32 ring)", "none", {}), ("INCEPTIONN 2^-10", "inceptionn", {"k": 10}),
           ("INCEPTIONN 2^-6", "inceptionn", {"k": 6}), ("truncation 16b", "truncation", {"bits": 16}),
           ("TernGrad", "terngrad", None), ("top-k 1%", "topk", {"k": 0.01}),
           ("gTop-k 10%", "gtopk", {"k": 0.1}),
           ("gTop-k 1%", "gtopk", {"k": 0.01}), ("random-k 10%", "randomk", None),
           ("block-random-k 10%", "blockk", None), ("ScaleCom CLT-k 1%", "scalecom", {"k": 0.01}),
           ("top-k 1% + INC 2^-10", "topk", {"k": 0.01, "value_k": 10}),
           ("INCEPTIONN-EB 2^-10", "inceptionn_eb", {"k": 10})]


def summary(scale, progress):
    out, base = [], None
    for name, method, kw in SUMMARY:
        def make(sizes, m=method, kw=kw):
            if kw is None:
                kw = {"layers": sizes} if m == "terngrad" else {"k": 0.1, "layers": sizes}
            return C.make(m, **kw)
        lr = {"lr": RB_LR} if method in ("randomk", "blockk") else {}
        runs = _runs("lenet", "digits", make, scale, progress, **lr)
        comp = make([1])
        base = base or float(np.mean([r.bytes_per_step for r in runs]))
        row = _row(name, runs, base, collective=comp.collective)
        payload = row["bytes"] if comp.collective in ("allreduce", "ring_inc") else None
        dense = runs[0].dense_bytes
        for p in (4, 32, 256):
            for link in LINKS:
                if comp.collective in ("allreduce", "ring_inc"):
                    # Ring bytes per worker were 2(P-1)/P n at P = workers: recover n.
                    n = payload * scale.workers / (2 * (scale.workers - 1))
                    t = alpha_beta_time(comp.collective, p, dense, n, link)
                else:
                    m = row["bytes"] / (scale.workers - 1) if comp.collective == "allgather" \
                        else row["bytes"]
                    t = alpha_beta_time(comp.collective, p, dense, m, link)
                row[f"t_{link}_{p}"] = t
        out.append(row)
    return out


EXPERIMENTS = {
    "table3": table3, "fig14": fig14, "terngrad": terngrad, "gtopk_bytes": gtopk_bytes,
    "gtopk_convergence": gtopk_convergence, "random_block": random_block,
    "random_block_bytes": random_block_bytes, "scalecom_bytes": scalecom,
    "scalecom_filter": scalecom_filter, "summary": summary,
}
