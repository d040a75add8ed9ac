"""The paper's Fig. 12 and Fig. 15 on the software NIC (`make bench-collectives`).

P ranks in P network namespaces (the worker-aggregator modes add one more host for the
aggregator, which contributes nothing of its own) exchange real HDC gradients through
the bridge, whose ports are rate-limited so that the wire, not the CPU, is meant to be
the bottleneck; the `busiest link` column says how close to the rate the busiest port
ran. Modes: WA (worker-aggregator), WA+C (gradients to the aggregator compressed),
INC (the ring), INC+C (the ring, every hop compressed), at 2^-10, MTU 9000.
Per configuration: the median exchange time of `iters` iterations (after one warm-up),
the bytes each worker put on the wire per iteration, and the paper's alpha-beta-gamma
model fitted to the uncompressed measurements, with the compressed modes predicted
from it and the measured wire ratio.
"""

from __future__ import annotations

import math
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import gradients
from ..drivers.bridge import RATE_GBPS, Bridge
from ..drivers.collectives import Ring, WorkerAggregator
from ..drivers.netns import netns_available
from .checks import float_in, int_in

__all__ = ["MODES", "Point", "measure", "fit_model", "sweep", "add_arguments", "run"]

MODES = {"WA": ("wa", False), "WA+C": ("wa", True), "INC": ("inc", False), "INC+C": ("inc", True)}
HDC_FLOATS = 789_010
MSS = 8948


@dataclass
class Point:
    mode: str
    p: int
    n_bytes: int
    seconds: float          # median exchange time per iteration
    spread: float           # max - min over the iterations
    wire_per_worker: float  # bytes a worker's port put on the wire per iteration
    busiest: float          # the busiest port's wire bytes / (time x rate)
    model: float = math.nan


def _inputs(p, n, seed=0):
    g = gradients.real_gradients(quiet=True).all()
    rng = np.random.default_rng(seed)
    return [np.roll(np.resize(g, n), int(rng.integers(0, g.size))).astype(np.float32)
            for _ in range(p)]


def measure(mode: str, p: int, n: int, *, rate_gbps: float, iters: int = 2, k: int = 10) -> Point:
    kind, compress = MODES[mode]
    wa = kind == "wa"
    hosts = p + 1 if wa else p
    xs = _inputs(p, n)
    if wa:
        xs = [np.zeros(n, np.float32)] + xs          # the aggregator adds nothing of its own
    cls = WorkerAggregator if wa else Ring
    from torch.distributed import HashStore
    store = HashStore()
    with Bridge(hosts, mtu=9000, k=k, rate_gbps=rate_gbps) as br:
        colls, errs = [None] * hosts, []

        def build(i):
            try:
                colls[i] = br.call(i, cls.from_store, store, i, hosts, host=br.addr(i),
                                   compress=compress, k=k, mss=MSS, timeout=600)
            except Exception as e:  # reported below
                errs.append(e)

        _threads([lambda i=i: build(i) for i in range(hosts)])
        if errs:
            raise errs[0]
        times, wire, busiest = [], [], []
        for it in range(iters + 1):
            before = [c["to_wire_bytes"] for c in br.counters()]
            bufs = [x.copy() for x in xs]
            t0 = time.perf_counter()
            _threads([lambda i=i: colls[i].allreduce(bufs[i]) for i in range(hosts)])
            dt = time.perf_counter() - t0
            after = [c["to_wire_bytes"] for c in br.counters()]
            if it == 0:
                continue                                     # warm-up
            sent = [a - b for a, b in zip(after, before)]
            workers = sent[1:] if wa else sent
            times.append(dt)
            wire.append(statistics.mean(workers))
            busiest.append(max(sent) * 8 / (dt * rate_gbps * 1e9))
        for c in colls:
            c.close()
    return Point(mode, p, 4 * n, statistics.median(times), max(times) - min(times),
                 statistics.mean(wire), max(busiest))


def _threads(fns):
    errs = []

    def wrap(fn):
        try:
            fn()
        except Exception as e:  # reported below
            errs.append(e)

    ts = [threading.Thread(target=wrap, args=(fn,)) for fn in fns]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        raise errs[0]


def _terms(mode, p, n, ratio=1.0):
    """The paper's model (Section VIII-C) as coefficients of (alpha, beta, gamma).
    WA: (1 + log p) a + (p + log p) n b + (p - 1) n g; INC: 2(p - 1) a + 2(p - 1)/p n b
    + (p - 1)/p n g. Compressed: the gradient legs carry n / ratio (WA: the p n part)."""
    lg = math.log2(p)
    if mode.startswith("WA"):
        nb = p * n / (ratio if mode == "WA+C" else 1.0) + lg * n
        return (1 + lg, nb, (p - 1) * n)
    r = ratio if mode == "INC+C" else 1.0
    return (2 * (p - 1), 2 * (p - 1) / p * n / r, (p - 1) / p * n)


def fit_model(points: list[Point]) -> tuple[float, float, float]:
    """Least-squares alpha, beta, gamma (seconds, s/byte, s/byte) on WA and INC."""
    rows = [(_terms(pt.mode, pt.p, pt.n_bytes), pt.seconds) for pt in points
            if pt.mode in ("WA", "INC")]
    a = np.array([r[0] for r in rows])
    b = np.array([r[1] for r in rows])
    sol, *_ = np.linalg.lstsq(a, b, rcond=None)
    return tuple(float(max(0.0, s)) for s in sol)


def sweep(sizes, ps, *, rate_gbps, iters, progress=True) -> tuple[list[Point], tuple]:
    from tqdm import tqdm
    configs = [(m, p, n) for n, plist in sizes for p in plist for m in MODES if p in ps]
    points = []
    bar = tqdm(configs, desc="exchanges", unit="config", disable=not progress, file=sys.stderr)
    for m, p, n in bar:
        bar.set_postfix_str(f"{m} P={p} {4 * n / 1e6:.1f} MB")
        points.append(measure(m, p, n, rate_gbps=rate_gbps, iters=iters))
    coef = fit_model(points)
    for pt in points:
        base = next(q for q in points if q.p == pt.p and q.n_bytes == pt.n_bytes
                    and q.mode == ("WA" if pt.mode.startswith("WA") else "INC"))
        ratio = base.wire_per_worker / pt.wire_per_worker if pt.wire_per_worker else 1.0
        pt.model = float(np.dot(_terms(pt.mode, pt.p, pt.n_bytes, ratio), coef))
    return points, coef


def table(points) -> str:
    lines = ["| size MB | P | mode | time s (median) | spread s | model s | wire MB per worker "
             "| busiest link | vs WA |", "|" + "---|" * 9]
    for pt in points:
        wa = next(q for q in points if q.p == pt.p and q.n_bytes == pt.n_bytes and q.mode == "WA")
        lines.append(f"| {pt.n_bytes / 1e6:.1f} | {pt.p} | {pt.mode} | {pt.seconds:.3f} | "
                     f"{pt.spread:.3f} | {pt.model:.3f} | {pt.wire_per_worker / 1e6:.2f} | "
                     f"{pt.busiest:.0%} | {1 - pt.seconds / wa.seconds:+.0%} |")
    return "\n".join(lines)


def plots(points, out: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out.mkdir(parents=True, exist_ok=True)
    sizes = sorted({pt.n_bytes for pt in points})
    fig, axes = plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 4), squeeze=False)
    for ax, n in zip(axes[0], sizes):
        for m in MODES:
            pts = sorted((pt for pt in points if pt.n_bytes == n and pt.mode == m), key=lambda q: q.p)
            ax.plot([q.p for q in pts], [q.seconds for q in pts], "o-", label=m)
            ax.plot([q.p for q in pts], [q.model for q in pts], ":", color=ax.lines[-1].get_color())
        ax.set(title=f"{n / 1e6:.1f} MB of gradients (dotted: fitted model)", xlabel="workers P",
               ylabel="exchange time per iteration (s)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "collectives_time_vs_p.png", dpi=110)
    plt.close(fig)
    p4 = [pt for pt in points if pt.p == 4]
    if p4:
        fig, ax = plt.subplots(figsize=(6, 4))
        for j, n in enumerate(sorted({pt.n_bytes for pt in p4})):
            wa = next(q for q in p4 if q.n_bytes == n and q.mode == "WA").seconds
            vals = [next(q for q in p4 if q.n_bytes == n and q.mode == m).seconds / wa for m in MODES]
            ax.bar(np.arange(4) + 0.4 * j, vals, 0.4, label=f"{n / 1e6:.1f} MB")
        ax.set_xticks(np.arange(4) + 0.2, list(MODES))
        ax.set(ylabel="exchange time / WA", title="Fig. 12 shape: 4 workers, 2^-10")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "collectives_fig12.png", dpi=110)
        plt.close(fig)


def add_arguments(ap) -> None:
    """`inceptionn bench collectives`'s options."""
    ap.add_argument("--rate", type=float_in(*RATE_GBPS), default=0.05, help="wire Gb/s per port (default 0.05)")
    ap.add_argument("--iters", type=int_in(1), default=2)
    ap.add_argument("--full", action="store_true", help="25 MB at P = 8 too (slow)")
    ap.add_argument("--out", type=Path, default=Path("build/bench_collectives"))


def run(args) -> int:
    why = netns_available()
    if why is not None:
        print(f"bench-collectives needs network namespaces: {why}", file=sys.stderr)
        return 2
    big = 25_000_000 // 4
    sizes = [(HDC_FLOATS, (2, 4, 8)), (big, (2, 4, 8) if args.full else (2, 4))]
    t0 = time.perf_counter()
    points, (a, b, g) = sweep(sizes, (2, 4, 8), rate_gbps=args.rate, iters=args.iters)
    print(f"wire rate {args.rate} Gb/s per port, MTU 9000, 2^-10, real HDC gradients, median of "
          f"{args.iters} iterations; {time.perf_counter() - t0:.0f} s in all")
    print(f"fitted model: alpha = {a * 1e3:.2f} ms, beta = {b * 1e9:.2f} ns/byte "
          f"({8 / b / 1e9 if b else math.inf:.3f} Gb/s), gamma = {g * 1e9:.2f} ns/byte")
    print(table(points))
    plots(points, args.out)
    print(f"plots in {args.out}/")
    return 0
