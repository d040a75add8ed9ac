"""ScaleCom: bytes per worker flat in P, and the low-pass filter with a scaled learning
rate.

Bytes: one exchange by simulation, CLT-k at 1% (the leader's k int32 indices passed
down the chain, then a ring all-reduce of the k values) against top-k's all-gather.
Filter: the LeNet-like CNN with the learning rate scaled up as large-batch training
does (x3, 0.05 to 0.15: the largest multiple at which dense SGD trained on every seed in
our trials; x4, the linear scaling rule for P = 4, diverged on one digits seed), CLT-k
at 1% with plain error feedback (beta = 1) against the paper's low-pass filter
(beta = 0.1), next to dense SGD at the same rate, on digits and mnist1d.
"""

from __future__ import annotations

import numpy as np

from .harness import Group, lenet, loss_str, one_step_bytes, paired, pct, signed, stats

TITLE = "ScaleCom: flat bytes, and the low-pass filter"
K = 0.01
BETAS = (1.0, 0.1)


SCALE_LR = 3


def scaled_lr(scale):
    return 0.05 * SCALE_LR


def filter_runs(scale, data):
    lr = scaled_lr(scale)
    return ([("dense", lenet(scale, data=data, lr=lr))] +
            [(f"CLT-k 1%, beta = {b:g}", lenet(scale, "scalecom", k=K, beta=b, data=data, lr=lr))
             for b in BETAS])


def configs(scale):
    return [c for data in scale.data for _, c in filter_runs(scale, data)]


def bytes_vs_p(scale):
    rows = []
    for p in scale.ps_bytes:
        s = one_step_bytes("scalecom", scale.bytes_d, p, k=K)
        t = one_step_bytes("topk", scale.bytes_d, p, k=K)
        rows.append(dict(P=p, scalecom=s["max"], scalecom_mean=s["mean"], topk=t["max"]))
    return rows


def analyse(runs, scale):
    filt, gains = {}, {}
    for data in scale.data:
        spec = filter_runs(scale, data)
        base = Group(runs, spec[0][1], scale)
        filt[data] = []
        for label, c in spec:
            g = Group(runs, c, scale)
            steps = [s for s, _ in g.runs[0].curve]
            accs = np.mean([[a for _, a in r.curve] for r in g.runs], axis=0)
            filt[data].append(dict(label=label, acc=g.acc, delta=g.minus(base), loss=g.loss,
                                   ratio=g.ratio, diverged=g.diverged, runs=g.runs,
                                   curve=list(zip(steps, accs.tolist()))))
        f = {r["label"]: r for r in filt[data]}
        low, plain = f["CLT-k 1%, beta = 0.1"].pop("runs"), f["CLT-k 1%, beta = 1"].pop("runs")
        gains[data] = (paired(low, plain),
                       stats([np.mean([a for _, a in x.curve]) - np.mean([a for _, a in y.curve])
                              for x, y in zip(low, plain)]))
        f["dense"].pop("runs")
    b = bytes_vs_p(scale)
    k = round(K * scale.bytes_d)
    return dict(bytes=b, filter=filt, gains=gains, lr=scaled_lr(scale), k=k, d=scale.bytes_d,
                workers=scale.workers)


def flatness(rows, from_p: int = 8) -> float:
    """Largest over smallest bytes of the busiest CLT-k worker for P >= from_p."""
    v = [r["scalecom"] for r in rows if r["P"] >= from_p]
    return max(v) / min(v)


def _gain(data, gains) -> str:
    g, curve = gains
    m, sd = 100 * g[0], 100 * g[1]
    if m > 0 and m > sd:
        verdict = "the paper's direction"
    elif abs(m) <= sd:
        verdict = "not resolved by the seeds"
    else:
        verdict = "against the paper"
    return (f"{m:+.1f} ± {sd:.1f} points on {data} at the end ({verdict}), "
            f"{100 * curve[0]:+.1f} ± {100 * curve[1]:.1f} averaged over the run's ten "
            f"checkpoints")


def _gap(f) -> str:
    best = max(f[d]["CLT-k 1%, beta = 0.1"]["delta"][0] for d in f)
    if best < -0.01:
        return "; at 1% neither variant reaches dense SGD in these short runs"
    return "; with the filter CLT-k at 1% comes within a point of dense SGD"


def section(res):
    k = res["k"]
    L = [f"## {TITLE}", "",
         f"Bytes sent per step by the busiest worker, one exchange of {res['d']:,} values, "
         f"k = {k:,} (model: CLT-k 4k + 2(P - 1)/P 4k, bounded by 12k = {12 * k:,}; top-k "
         f"8k(P - 1)):", "",
         "| P | CLT-k, busiest | CLT-k, mean over workers | top-k | of the 12k bound |",
         "|---|---|---|---|---|"]
    for r in res["bytes"]:
        L.append(f"| {r['P']} | {r['scalecom']:,} | {r['scalecom_mean']:,.0f} | {r['topk']:,} | "
                 f"{r['scalecom'] / (12 * k):.2f} |")
    L += ["", f"Low-pass filter, learning rate scaled to {res['lr']:g} (x{SCALE_LR}), "
          f"P = {res['workers']}:", "",
          "| data | method | accuracy % | vs dense, points (paired) | final training loss | "
          "ratio |", "|---|---|---|---|---|---|"]
    for data, rows in res["filter"].items():
        for r in rows:
            div = f" ({r['diverged']} diverged)" if r["diverged"] else ""
            L.append(f"| {data} | {r['label']} | {pct(r['acc'])}{div} | {signed(r['delta'])} | "
                     f"{loss_str(r['loss'])} | {r['ratio']:.1f}x |")
    f = {d: {r["label"]: r for r in rows} for d, rows in res["filter"].items()}
    L += ["", f"Delta: bytes per worker are flat in P as the paper says (within "
          f"{100 * (flatness(res['bytes']) - 1):.0f}% from P = 8 on, under the 12k bound at "
          f"every P), while top-k's grow linearly. The paper calls the cost constant, O(1), the "
          f"index vector costing about what the values cost; here the busiest worker sends "
          f"4k index bytes and 2(P - 1)/P x 4k value bytes, which approach 12k from below. "
          f"With the scaled rate, the filter (beta = 0.1) against plain error feedback, paired "
          f"by seed: " + "; ".join(_gain(d, g) for d, g in res["gains"].items()) +
          ". The paper reports beta = 1 degrading on ImageNet, WMT and SWB300 in large-batch "
          "runs, beta = 0.1 matching the baseline, and CIFAR-10 fine either way" + _gap(f) +
          ".", "",
          "![ScaleCom filter](results/scalecom_filter.png)", ""]
    return L
