"""The paper's Fig. 12 and Fig. 15 on the software NIC (`make bench-collectives`).

P ranks in P network namespaces (the worker-aggregator modes add one more host for the
aggregator, which contributes nothing of its own) exchange real HDC gradients through
the bridge, whose links are rate-limited in both directions so that the wire, not the
CPU, is meant to be the bottleneck; the `busiest link` column says how close to the
rate the busiest link ran. Modes: WA (worker-aggregator; by default the paper's, its
legs in sequence: every gradient in, then the sum back; `--wa pipelined` overlaps
them), WA+C (gradients to the aggregator compressed), INC (the ring), INC+C (the ring,
every hop compressed), at 2^-10, MTU 9000.
Per configuration: the median exchange time of `iters` iterations (after one warm-up),
the bytes each worker and the busiest link carried per iteration, and the paper's
alpha-beta-gamma model with a CPU term, fitted to all rows of the same rate. The
model's wire term is the busiest link's bytes (measured): a link is full duplex, so
its time is its larger direction where the legs overlap (the ring, the pipelined WA)
and the sum of its two directions where they run in sequence (the paper's WA, at the
aggregator: p gradients in, p sums out; docs/benchmarks.md). One row set per wire rate
(`--rate 0.05,1`); after each, the targets: INC+C against WA at the largest P, every
"+C" row against its uncompressed twin where the model predicts a gain, every row
against the model.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import gradients
from ..drivers.bridge import Bridge
from ..drivers.collectives import Ring, WorkerAggregator
from ..drivers.collectives.transports import LocalStore

__all__ = ["MODES", "Point", "measure", "fit_model", "sweep", "verdicts", "table",
           "plots", "next_to_paper", "HDC_FLOATS"]


MODES = {"WA": ("wa", False), "WA+C": ("wa", True), "INC": ("inc", False), "INC+C": ("inc", True)}


HDC_FLOATS = 789_010


MSS = 8948


MODEL_TOLERANCE = 0.25   # a row within 25% of its model time agrees with the model


GAIN_TARGET = 0.70       # INC+C against WA at the largest P: the paper's 70.9-80.7% less


@dataclass
class Point:
    mode: str
    p: int
    n_bytes: int
    seconds: float          # median exchange time per iteration
    spread: float           # max - min over the iterations
    wire_per_worker: float  # bytes a worker's port put on the wire per iteration
    busiest: float          # the busiest link's wire bytes / (time x rate)
    busiest_bytes: float = math.nan   # the busiest link's wire bytes per iteration (link_bytes)
    rate_gbps: float = math.nan
    cpu: float = math.nan   # CPU seconds of this process per iteration (ranks, switch, kernel)
    model: float = math.nan
    schedule: str = "sequential"      # WA's legs (wa.SCHEDULES); the ring ignores it


def link_bytes(mode: str, sent, schedule: str = "sequential") -> float:
    """The busiest link's wire bytes that set its time, from each port's bytes to the
    wire (`sent`; WA: the aggregator's first). A link carries its port's bytes out and
    what the others send to it in; where the legs overlap (the ring, the pipelined WA) its
    time is the larger direction, where they run in sequence (the paper's WA) the sum.
    WA: the aggregator receives every worker's bytes and sends its replies; ring: port i
    receives its predecessor's bytes."""
    if mode.startswith("WA"):
        out, into = sent[0], sum(sent[1:])
        return out + into if schedule == "sequential" else max(out, into)
    return max(max(s, sent[i - 1]) for i, s in enumerate(sent))


def _inputs(p, n, seed=0):
    g = gradients.real_gradients(quiet=True).all()
    rng = np.random.default_rng(seed)
    return [np.roll(np.resize(g, n), int(rng.integers(0, g.size))).astype(np.float32)
            for _ in range(p)]


def measure(mode: str, p: int, n: int, *, rate_gbps: float, iters: int = 2, k: int = 10,
            schedule: str = "sequential", offload: bool | None = None) -> Point:
    kind, compress = MODES[mode]
    wa = kind == "wa"
    opts = {"schedule": schedule} if wa else {}
    hosts = p + 1 if wa else p
    xs = _inputs(p, n)
    if wa:
        xs = [np.zeros(n, np.float32)] + xs          # the aggregator adds nothing of its own
    cls = WorkerAggregator if wa else Ring
    store = LocalStore()               # the ranks are threads here: no torch needed
    with Bridge(hosts, mtu=9000, k=k, rate_gbps=rate_gbps, offload=offload) as br:
        colls, errs = [None] * hosts, []

        def build(i):
            try:
                colls[i] = br.call(i, cls.from_store, store, i, hosts, host=br.addr(i),
                                   compress=compress, k=k, mss=MSS, timeout=600, **opts)
            except Exception as e:  # reported below
                errs.append(e)

        _threads([lambda i=i: build(i) for i in range(hosts)])
        if errs:
            raise errs[0]
        times, wire, busiest, top, cpu = [], [], [], [], []
        for it in range(iters + 1):
            before = [c["to_wire_bytes"] for c in br.counters()]
            bufs = [x.copy() for x in xs]
            t0, c0 = time.perf_counter(), time.process_time()
            _threads([lambda i=i: colls[i].allreduce(bufs[i]) for i in range(hosts)])
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            after = [c["to_wire_bytes"] for c in br.counters()]
            if it == 0:
                continue                                     # warm-up
            sent = [a - b for a, b in zip(after, before)]
            workers = sent[1:] if wa else sent
            times.append(dt)
            wire.append(statistics.mean(workers))
            link = link_bytes(mode, sent, schedule)
            busiest.append(link * 8 / (dt * rate_gbps * 1e9))
            top.append(link)
            cpu.append(dc)
        for c in colls:
            c.close()
    return Point(mode, p, 4 * n, statistics.median(times), max(times) - min(times),
                 statistics.mean(wire), max(busiest), statistics.median(top), rate_gbps,
                 statistics.median(cpu), schedule=schedule if wa else "-")


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


def _terms(pt: Point):
    """The paper's model (Section VIII-C) as coefficients of (alpha, beta, gamma):
    WA (1 + log p) a + (p + log p) n b + (p - 1) n g, INC 2(p - 1) a + 2(p - 1)/p n b +
    (p - 1)/p n g. The beta term is the busiest link's wire bytes, measured (link_bytes):
    the paper's WA the aggregator's p gradients in (over the wire ratio with WA+C) plus its
    p uncompressed sums out, one leg after the other (its replies are unicast, not the
    paper's log p tree); the pipelined WA the larger of the two; INC 2(p - 1)/p n over
    the wire ratio."""
    p, n = pt.p, pt.n_bytes
    lg = math.log2(p)
    if pt.mode.startswith("WA"):
        return (1 + lg, pt.busiest_bytes, (p - 1) * n)
    return (2 * (p - 1), pt.busiest_bytes, (p - 1) / p * n)


def model_time(pt: Point, coef) -> float:
    """alpha steps + max(wire and sum, kappa x CPU seconds): the wire and the CPU work
    overlap, and on a machine with few cores the CPU can be the slower of the two
    (kappa = 1 / the cores the run had)."""
    a, b, g, k = coef
    steps, wire, summed = _terms(pt)
    return a * steps + max(b * wire + g * summed, k * pt.cpu)


def fit_model(points: list[Point]) -> tuple[float, float, float, float]:
    """Non-negative least squares alpha, beta, gamma, kappa (s, s/byte, s/byte, s per CPU
    second) over one rate's rows, each weighted by 1 / its time (the targets are
    relative). Which rows the CPU bounds starts from the cores (CPU / cores against the
    wire time at the configured rate) and is refined until it no longer changes."""
    from scipy.optimize import nnls
    t = np.array([pt.seconds for pt in points])
    terms = np.array([_terms(pt) for pt in points], dtype=float)
    cpu = np.array([pt.cpu for pt in points])
    rate = np.array([pt.rate_gbps * 1e9 / 8 for pt in points])
    cpu_bound = cpu / (os.cpu_count() or 1) > terms[:, 1] / rate
    sol = np.zeros(4)
    for _ in range(50):
        wire = np.where(cpu_bound[:, None], 0.0, terms[:, 1:])
        a = np.column_stack([terms[:, 0], wire, np.where(cpu_bound, cpu, 0.0)]) / t[:, None]
        sol, _ = nnls(a, np.ones(len(points)))
        again = sol[3] * cpu > terms[:, 1] * sol[1] + terms[:, 2] * sol[2]
        if (again == cpu_bound).all():
            break
        cpu_bound = again
    return tuple(float(v) for v in sol)


def sweep(sizes, ps, *, rate_gbps, iters, schedule="sequential",
          progress=True, offload=None) -> tuple[list[Point], tuple]:
    from tqdm import tqdm
    configs = [(m, p, n) for n, plist in sizes for p in plist for m in MODES if p in ps]
    points = []
    bar = tqdm(configs, desc=f"exchanges at {rate_gbps:g} Gb/s", unit="config",
               disable=not progress, file=sys.stderr)
    for m, p, n in bar:
        bar.set_postfix_str(f"{m} P={p} {4 * n / 1e6:.1f} MB")
        points.append(measure(m, p, n, rate_gbps=rate_gbps, iters=iters, schedule=schedule,
                              offload=offload))
    coef = fit_model(points)
    for pt in points:
        pt.model = model_time(pt, coef)
    return points, coef


def _twin(points, pt, mode):
    return next((q for q in points if q.p == pt.p and q.n_bytes == pt.n_bytes
                 and q.mode == mode), None)


def verdicts(points: list[Point]) -> list[tuple[bool, str]]:
    """The issue's targets on one rate's rows: (met, line) each."""
    out = []
    top = max(pt.p for pt in points)
    for pt in (q for q in points if q.mode == "INC+C" and q.p == top):
        wa = _twin(points, pt, "WA")
        if wa is not None:
            less = 1 - pt.seconds / wa.seconds
            out.append((less >= GAIN_TARGET,
                        f"INC+C {less:.0%} less time than WA at P = {top}, "
                        f"{pt.n_bytes / 1e6:.1f} MB (target >= {GAIN_TARGET:.0%})"))
    for pt in (q for q in points if q.mode.endswith("+C")):
        twin = _twin(points, pt, pt.mode[:-2])
        if twin is None:
            continue
        gain = 1 - pt.model / twin.model
        where = f"{pt.mode} P = {pt.p} {pt.n_bytes / 1e6:.1f} MB"
        if gain > 0.05:
            out.append((pt.seconds <= twin.seconds,
                        f"{where}: model {gain:.0%} less than {twin.mode}, measured "
                        f"{1 - pt.seconds / twin.seconds:.0%} less"))
        else:
            out.append((True, f"{where}: model predicts no gain over {twin.mode} "
                              f"({gain:+.0%}); measured {1 - pt.seconds / twin.seconds:+.0%}"))
    off = [pt for pt in points if abs(pt.seconds / pt.model - 1) > MODEL_TOLERANCE]
    worst = max(points, key=lambda q: abs(q.seconds / q.model - 1))
    out.append((not off, f"{len(points) - len(off)} of {len(points)} rows within "
                         f"{MODEL_TOLERANCE:.0%} of the model (worst: {worst.mode} P = {worst.p} "
                         f"{worst.n_bytes / 1e6:.1f} MB, {worst.seconds / worst.model - 1:+.0%})"))
    return out


PAPER_LESS = {("WA+C", "WA"): "about 30.8%", ("INC+C", "INC"): "about 53.9%",
              ("INC+C", "WA"): "70.9-80.7%"}


def next_to_paper(points) -> list[str]:
    """Each compressed mode's time against its baseline, per size and P, beside the
    paper's reduction of communication time (Section VIII-A, Fig. 12; 4 workers, 10 GbE)."""
    out = []
    for (mode, base), paper in PAPER_LESS.items():
        vals = []
        for pt in (q for q in points if q.mode == mode):
            twin = _twin(points, pt, base)
            if twin is not None:
                vals.append(f"P = {pt.p} {pt.n_bytes / 1e6:.1f} MB {1 - pt.seconds / twin.seconds:.0%}")
        if vals:
            out.append(f"{mode} less time than {base}: {', '.join(vals)} (paper: {paper})")
    return out


def table(points) -> str:
    lines = ["| size MB | P | mode | time s (median) | spread s | model s | time / model "
             "| wire MB per worker | busiest link MB | busiest link | CPU s | less time than WA |",
             "|" + "---|" * 12]
    for pt in points:
        wa = _twin(points, pt, "WA")
        vs = f"{1 - pt.seconds / wa.seconds:+.0%}" if wa is not None else "-"
        lines.append(f"| {pt.n_bytes / 1e6:.1f} | {pt.p} | {pt.mode} | {pt.seconds:.3f} | "
                     f"{pt.spread:.3f} | {pt.model:.3f} | {pt.seconds / pt.model:.2f} | "
                     f"{pt.wire_per_worker / 1e6:.2f} | {pt.busiest_bytes / 1e6:.2f} | "
                     f"{pt.busiest:.0%} | {pt.cpu:.2f} | {vs} |")
    return "\n".join(lines)


def plots(points, out: Path, tag: str = ""):
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
    fig.savefig(out / f"collectives_time_vs_p{tag}.png", dpi=110)
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
        fig.savefig(out / f"collectives_fig12{tag}.png", dpi=110)
        plt.close(fig)
