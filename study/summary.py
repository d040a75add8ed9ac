"""Every method side by side on one setting (the LeNet-like CNN on digits, P = 4):
accuracy, bytes per worker per step, compression ratio, and the modelled exchange time
of one step on a 10G and a 1G link for P = 4, 32 and 256 (alpha-beta model).

The alpha-beta model (gTop-k paper, Table I and Section V-C): sending a message of n
bytes between two workers costs alpha + n beta. Per step:
- ring all-reduce of an n-byte vector: 2(P - 1) alpha + 2(P - 1)/P n beta;
- ring all-gather of one m-byte payload per worker: (P - 1) alpha + (P - 1) m beta;
- gTop-k's tree: log2 P rounds up and log2 P down, each alpha + m beta, m = 8k;
- TernGrad: an all-gather of the payloads after one of the 4L-byte scalers;
- ScaleCom: a binomial-tree broadcast of the leader's 4k index bytes, log2 P (alpha +
  4k beta), then a ring all-reduce of the 4k value bytes.
n and m come from the measured bytes at P = 4 (a ring codec's n is its measured bytes
times P / (2(P - 1)), the bytes-equivalent of the compressed vector), so a codec's
ratio on partial sums is taken as independent of P.
"""

from __future__ import annotations

import math

from .fig14 import config as fig14_config
from .gtopk import runs_spec as gtopk_spec
from .harness import Group, lenet, pct, signed
from .models import build, dataset, layer_sizes
from .table3 import inc10

TITLE = "Summary: every method, bytes and modelled exchange time"
# alpha (s), beta (s per byte). 1G: measured by the gTop-k paper on its 1 GbE cluster
# (alpha = 0.436 ms, beta = 9e-6 ms per byte); 10G: line rate, alpha assumed 20 us.
LINKS = {"10G": (20e-6, 0.8e-9), "1G": (0.436e-3, 9e-9)}
PS = (4, 32, 256)
BIG = 100e6   # bytes of float32 gradient in the extrapolation (gTop-k's Fig. 9: 100 MB)
PLAIN = dict(lr=0.2, momentum=0.0)


def rows_spec(scale):
    g = dict(gtopk_spec(scale))
    return [
        ("dense (float32 ring)", "ring", lenet(scale)),
        ("INCEPTIONN 2^-10", "ring", inc10(scale, "lenet")),
        ("INCEPTIONN 2^-6", "ring", fig14_config(scale, "lenet", "inceptionn", {"k": 6})),
        ("truncation 16b", "ring", fig14_config(scale, "lenet", "truncation", {"bits": 16})),
        ("INCEPTIONN-EB 2^-10", "ring", lenet(scale, "inceptionn_eb", k=10)),
        ("TernGrad", "terngrad", lenet(scale, "terngrad", layerwise=True)),
        ("top-k 1%", "allgather", g["top-k 1%"]),
        ("gTop-k 1%", "tree", g["gTop-k 1%"]),
        ("gTop-k 0.1%, warm-up", "tree", g["gTop-k 0.1%, warm-up"]),
        ("random-k 10%, shared seed *", "ring",
         lenet(scale, "randomk", k=0.1, layerwise=True, scope="layer", shared=True, **PLAIN)),
        ("block-random-k 10%, shared seed *", "ring",
         lenet(scale, "blockk", k=0.1, layerwise=True, scope="layer", shared=True, **PLAIN)),
        ("random-k 10%, shared seed, momentum 0.9", "ring",
         lenet(scale, "randomk", k=0.1, layerwise=True, scope="layer", shared=True)),
        ("ScaleCom CLT-k 1%", "scalecom", lenet(scale, "scalecom", k=0.01)),
        ("top-k 1% + INC 2^-10 values", "allgather", lenet(scale, "topk", k=0.01, value_k=10)),
    ]


def configs(scale):
    return [c for *_, c in rows_spec(scale)]


def exchange_time(kind: str, p: int, link: str, n: float, layers: int = 1) -> float:
    """Seconds for one step's exchange. n: ring bytes (ring, scalecom: the 4k values),
    one worker's payload (allgather, terngrad) or one tree message (tree)."""
    a, b = LINKS[link]
    if p == 1:
        return 0.0
    if kind == "ring":
        return 2 * (p - 1) * a + 2 * (p - 1) / p * n * b
    if kind == "allgather":
        return (p - 1) * (a + n * b)
    if kind == "terngrad":
        return (p - 1) * (a + 4 * layers * b) + (p - 1) * (a + n * b)
    if kind == "tree":
        return 2 * math.log2(p) * (a + n * b)
    if kind == "scalecom":
        return math.log2(p) * (a + n * b) + exchange_time("ring", p, link, n)
    raise ValueError(f"unknown exchange {kind!r}")


def message_bytes(kind: str, g: Group, p: int, layers: int) -> float:
    """The model's n from the measured bytes at P = p (see the module's docstring)."""
    if kind == "ring":
        return g.sent * p / (2 * (p - 1))
    if kind == "allgather":
        return g.sent / (p - 1)
    if kind == "terngrad":
        return g.sent / (p - 1) - 4 * layers   # the payload; the prelude's scalers apart
    if kind == "tree":
        return g.sent_max / math.log2(p)
    if kind == "scalecom":
        return g.sent * p / (3 * (p - 1))      # mean: 4k (P-1)/P chain + 8k (P-1)/P ring
    raise ValueError(kind)


def analyse(runs, scale):
    p = scale.workers
    dense = Group(runs, lenet(scale), scale)
    layers = len(layer_sizes(build("lenet", dataset("digits"), 0)))
    rows = []
    for label, kind, c in rows_spec(scale):
        g = Group(runs, c, scale)
        n = message_bytes(kind, g, p, layers)
        scale_up = BIG / dense.runs[0].dense_bytes
        rows.append(dict(
            label=label, kind=kind, acc=g.acc, delta=g.minus(dense), sent=g.sent,
            ratio=g.ratio, diverged=g.diverged, n=n, layers=layers,
            t={(link, q): exchange_time(kind, q, link, n, layers) for link in LINKS for q in PS},
            t_big={q: exchange_time(kind, q, "1G", n * scale_up, layers) for q in PS}))
    return dict(rows=rows, workers=p, d=dense.runs[0].d)


def _ms(t: float) -> str:
    return f"{1e3 * t:.3g}"


def section(res):
    L = [f"## {TITLE}", "",
         f"The LeNet-like CNN on digits ({res['d']:,} parameters), P = {res['workers']}, "
         f"same steps and seeds; * trained with plain SGD at learning rate 0.2 (with momentum, "
         f"the row below, random-k and its error feedback do not train), the others with "
         f"momentum 0.9 at 0.05. "
         f"Ratio: float32 ring bytes over the method's, both at P = {res['workers']}. Times "
         f"in ms.", "",
         "Alpha-beta model: a message of n bytes costs alpha + n beta. 10G: alpha = 20 us "
         "(assumed), beta = 0.8 ns/byte (10 Gb/s); 1G: alpha = 0.436 ms, beta = 9 ns/byte "
         "(the gTop-k paper's measurement of its 1 GbE cluster). Per step, ring all-reduce "
         "2(P-1) alpha + 2(P-1)/P n beta; all-gather (P-1) alpha + (P-1) m beta, m one "
         "worker's payload; gTop-k tree 2 log2 P (alpha + 8k beta); TernGrad an all-gather of "
         "the 4L scaler bytes then of the payloads; ScaleCom log2 P (alpha + 4k beta) for the "
         "index broadcast then a ring all-reduce of 4k bytes. n and m from the measured "
         "bytes at P = 4.", "",
         "| method | exchange | accuracy % | vs dense, points | bytes/worker/step | ratio | "
         + " | ".join(f"{link} P={q}" for link in LINKS for q in PS) + " |",
         "|" + "---|" * (6 + len(LINKS) * len(PS))]
    for r in res["rows"]:
        times = " | ".join(_ms(r["t"][(link, q)]) for link in LINKS for q in PS)
        L.append(f"| {r['label']} | {r['kind']} | {pct(r['acc'])} | {signed(r['delta'])} | "
                 f"{r['sent']:,.0f} | {r['ratio']:.1f}x | {times} |")
    L += ["", f"At {res['d']:,} parameters ({4 * res['d'] / 1e3:.0f} KB) the latency term "
          f"dominates: on 1G a ring "
          f"costs 2(P - 1) x 0.436 ms whatever it carries, and only gTop-k's log2 P rounds "
          f"escape it. The same ratios on a 100 MB gradient (the gTop-k paper's Fig. 9 size), "
          f"1G, ms:", "", "| method | " + " | ".join(f"P={q}" for q in PS) + " |",
          "|" + "---|" * (1 + len(PS))]
    for r in res["rows"]:
        L.append(f"| {r['label']} | " + " | ".join(f"{1e3 * r['t_big'][q]:,.0f}" for q in PS)
                 + " |")
    L += ["", "![modelled exchange time](results/summary_time.png)", ""]
    return L
