"""INCEPTIONN Table III: the share of 2-, 10-, 18- and 34-bit codes (tag included) in
the gradients a worker hands its NIC while the network trains with INC(2^-10), the
paper's codec (wire format version 1, `codec="paper"`, named explicitly: the project's
default elsewhere is the bounded codec of wire format version 2).

Worker 0's raw gradient is measured with golden.band_stats at ten points of each run,
for the three bounds of the table; the shares are averaged over those points and the
seeds. Both models: the paper's HDC network and the LeNet-like CNN (the paper has no
LeNet row; its four models span 75-94% 2-bit codes at 2^-10).
"""

from __future__ import annotations

import numpy as np

from .harness import Group, hdc, lenet

TITLE = "INCEPTIONN Table III: code lengths of the gradients"
BOUNDS = (10, 8, 6)
BITS = (2, 10, 18, 34)
# Table III, HDC rows: 2-, 10-, 18-, 34-bit shares (%).
PAPER_HDC = {10: (92.0, 6.5, 1.5, 0.0), 8: (95.7, 3.4, 0.9, 0.0), 6: (98.1, 1.6, 0.4, 0.0)}
PAPER_RANGE_2BIT = {10: (74.9, 94.2), 8: (82.5, 96.2), 6: (93.0, 98.1)}   # four models


def inc10(scale, model: str):
    """The INC(2^-10) training run Table III measures (shared with Fig. 14)."""
    build = hdc if model == "hdc" else lenet
    return build(scale, "inceptionn", k=10, bands=BOUNDS)


def configs(scale):
    return [inc10(scale, m) for m in scale.models]


def analyse(runs, scale):
    out = {}
    for model in scale.models:
        g = Group(runs, inc10(scale, model), scale)
        shares = {k: [100 * float(np.mean([r.shares[k][b] for r in g.runs])) for b in BITS]
                  for k in BOUNDS}
        spread = {k: 100 * float(np.std([r.shares[k][2] for r in g.runs])) for k in BOUNDS}
        steps = [s for s, _ in g.runs[0].trace]
        trace = {k: [100 * float(np.mean([r.trace[i][1][k] for r in g.runs]))
                     for i in range(len(steps))] for k in BOUNDS}
        out[model] = dict(shares=shares, spread=spread, steps=steps, trace=trace,
                          total_steps=g.config.steps)
    return out


def section(res):
    L = [f"## {TITLE}", "",
         "Share of worker 0's gradient values per code length (2-bit tag plus 0, 8, 16 or "
         "32 data bits), measured with golden.band_stats at ten points of each INC(2^-10) "
         "run (the paper's codec, wire format version 1) and averaged over them and the "
         "seeds (± the seeds' sd of the 2-bit share).",
         "", "| model | bound | 2-bit | 10-bit | 18-bit | 34-bit | paper, HDC |",
         "|---|---|---|---|---|---|---|"]
    for model, name in (("hdc", "HDC"), ("lenet", "LeNet-like")):
        if model not in res:
            continue
        r = res[model]
        for k in BOUNDS:
            s = r["shares"][k]
            paper = " / ".join(f"{v:.1f}" for v in PAPER_HDC[k]) if model == "hdc" else \
                f"2-bit {PAPER_RANGE_2BIT[k][0]:.1f}-{PAPER_RANGE_2BIT[k][1]:.1f} (4 models)"
            L.append(f"| {name} | 2^-{k} | {s[0]:.1f} ± {r['spread'][k]:.1f}% | {s[1]:.1f}% | "
                     f"{s[2]:.2f}% | {s[3]:.3f}% | {paper} |")
    name = "HDC network" if "hdc" in res else "LeNet-like CNN"
    h = res.get("hdc", res["lenet"])
    first, last = h["trace"][10][0], h["trace"][10][-1]
    ours = h["shares"][10][0]
    trend = ("rises" if last > first + 2 else "falls" if last < first - 2 else "stays")
    L += ["", f"Delta: our {name} has {'fewer' if ours < 92.0 else 'more'} 2-bit codes at "
          f"2^-10 than the paper's HDC ({ours:.1f}% against 92.0%). The share follows the "
          f"gradients' scale, which an absolute bound does not adapt to: over our "
          f"{h['total_steps']} steps from a fresh He initialisation it {trend} from "
          f"{first:.1f}% (first step) to {last:.1f}% (last sample), while the paper's table "
          f"averages 10,000 iterations on MNIST, most of them near convergence, where gradients "
          f"are small. The order of the bounds and the near-absence of 34-bit codes "
          f"(|g| >= 1) are the paper's.", "",
          "![Table III over training](results/table3.png)", ""]
    return L
