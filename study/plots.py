"""The study's figures (docs/results/*.png), drawn from the experiments' results."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import scalecom, summary, table3

__all__ = ["draw"]


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _p_axis(ax, ps):
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ps), [str(p) for p in ps])
    ax.minorticks_off()


MODELS = (("hdc", "HDC network"), ("lenet", "LeNet-like CNN"))


def _axes(plt, n, size, **kw):
    fig, axes = plt.subplots(1, n, figsize=(size[0] * n, size[1]), squeeze=False, **kw)
    return fig, list(axes[0])


def _table3(plt, res, path):
    models = [(m, n) for m, n in MODELS if m in res]
    fig, axes = _axes(plt, len(models), (5.5, 3.8), sharey=True)
    for ax, (model, name) in zip(axes, models):
        r = res[model]
        for k, color in zip(table3.BOUNDS, ("tab:blue", "tab:orange", "tab:green")):
            ax.plot(r["steps"], r["trace"][k], "o-", color=color, label=f"ours, 2^-{k}")
            if model == "hdc":
                ax.axhline(table3.PAPER_HDC[k][0], color=color, ls="--", lw=1,
                           label=f"paper HDC, 2^-{k}")
        ax.set(title=f"{name}: 2-bit codes while training with INC(2^-10)",
               xlabel="training step", ylim=(0, 100))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel("share of gradient values (%)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _fig14(plt, res, path):
    models = [(m, n) for m, n in MODELS if m in res["models"]]
    fig, axes = _axes(plt, len(models), (6.5, 4.2))
    for ax, (model, name) in zip(axes, models):
        rows = res[model]
        x = np.arange(len(rows))
        colors = ["tab:gray" if r["label"].startswith("base") else "tab:orange"
                  if "b-T" in r["label"] else "tab:green" if "EB" in r["label"] else "tab:blue"
                  for r in rows]
        ax.bar(x, [100 * r["acc"][0] for r in rows], yerr=[100 * r["acc"][1] for r in rows],
               color=colors, capsize=3)
        ax.set_xticks(x, [r["label"].replace(", PyTorch default init", ",\ndefault init")
                          for r in rows], rotation=35, ha="right", fontsize=8)
        ax.set(ylabel="test accuracy (%)", ylim=(0, 105),
               title=f"{name}: accuracy (bars), compression ratio (red dots)")
        ax2 = ax.twinx()
        ax2.plot(x, [r["ratio"] for r in rows], "o", color="tab:red")
        ax2.set_ylim(0, 18)
        ax2.set_ylabel("ratio against the float32 ring", color="tab:red")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _bytes(plt, res, path):
    g, s, rb = res["gtopk"]["bytes"], res["scalecom"]["bytes"], res["random_block"]["bytes"]
    ps = [r["P"] for r in g]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    ax.plot(ps, [r["dense"] for r in g], "k.-", label="float32 ring all-reduce (all values)")
    ax.plot(ps, [r["topk"] for r in g], "o-", ms=9, label="top-k 1% (all-gather)")
    ax.plot(ps, [r["gtopk"] for r in g], "o-", label="gTop-k 1% (tree, rank 0)")
    ax.plot(ps, [r["scalecom"] for r in s], "s-", label="ScaleCom CLT-k 1%")
    ax.plot(ps, [r[("randomk", True)] for r in rb], "^--", label="random-k 1%, shared seed")
    ax.plot(ps, [r[("randomk", False)] for r in rb], "v--",
            label="random-k 1%, own seeds (= top-k)")
    ax.set(yscale="log", xlabel="workers P", ylabel="bytes sent per step, busiest worker",
           title=f"Bytes per worker against P (d = {res['gtopk']['d']:,})")
    _p_axis(ax, ps)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _smooth(x, w=15):
    x = np.asarray(x, float)
    return np.convolve(x, np.ones(w) / w, mode="valid") if x.size > w else x


def _gtopk(plt, res, path):
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for r in res["conv"]:
        y = _smooth(r["losses"])
        ax.plot(np.arange(y.size) + 1, y, label=r["label"])
    ax.set(yscale="log", xlabel="training step", ylabel="training loss (moving mean of 15)",
           title="gTop-k and top-k next to dense SGD (LeNet-like, digits)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _random_block(plt, res, path):
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
    ax = axes[0]
    names = [(s, c) for s in ("random", "block") for c in ("allreduce", "allgather")]
    x = np.arange(len(names))
    for off, scope in ((-0.2, "layer"), (0.2, "global")):
        ys = [res["table"][(s, scope, c)]["acc"] for s, c in names]
        ax.bar(x + off, [100 * m for m, _ in ys], 0.4, yerr=[100 * sd for _, sd in ys],
               capsize=3, label=f"{scope}-wise scope" if scope == "layer" else "global scope")
    ax.axhline(100 * res["dense"]["acc"][0], color="k", ls="--", lw=1, label="dense")
    ax.set_xticks(x, [f"{s}-k\n{c}" for s, c in names])
    ax.set(ylabel="test accuracy (%)", title=f"mnist1d, P = {res['workers']}: scope")
    ax.legend(fontsize=8)
    ax = axes[1]
    ps = [r["P"] for r in res["sweep"]]
    if not ps:
        ax.set_axis_off()
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        return
    ax.plot(ps, [100 * r["dense"][0] for r in res["sweep"]], "k.--", label="dense")
    for s, c in names:
        ax.errorbar(ps, [100 * r[(s, c)]["acc"][0] for r in res["sweep"]],
                    yerr=[100 * r[(s, c)]["acc"][1] for r in res["sweep"]], marker="o",
                    capsize=3, label=f"{s}-k {c}")
    _p_axis(ax, ps)
    ax.set(xlabel="workers P", ylabel="test accuracy (%)", title="layer-wise, against P")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _scalecom(plt, res, path):
    data = list(res["filter"])
    fig, axes = _axes(plt, len(data), (6, 4))
    for ax, d in zip(axes, data):
        for r in res["filter"][d]:
            steps, accs = zip(*r["curve"])
            ax.plot(steps, [100 * a for a in accs], "o-", label=r["label"])
        ax.set(title=f"{d}, learning rate {res['lr']:g} (scaled x{scalecom.SCALE_LR})",
               xlabel="training step", ylabel="test accuracy (%, mean of seeds)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _summary(plt, res, path):
    ps = [2 ** i for i in range(1, 9)]
    fig, axes = _axes(plt, 3, (5.2, 4.8))
    panels = [("10G", 1.0, f"our gradient ({4 * res['d'] / 1e3:.0f} KB)"),
              ("1G", 1.0, f"our gradient ({4 * res['d'] / 1e3:.0f} KB)"),
              ("1G", summary.BIG / (4 * res["d"]), f"a {summary.BIG / 1e6:.0f} MB gradient")]
    for ax, (link, up, what) in zip(axes, panels):
        for r in res["rows"]:
            if r["label"].startswith(("block", "INCEPTIONN-EB", "top-k 1% +", "gTop-k 0.1",
                                      "random-k 10%, shared seed, m")):
                continue
            ax.plot(ps, [1e3 * summary.exchange_time(r["kind"], p, link, r["n"] * up,
                                                     r["layers"]) for p in ps],
                    ".-", label=r["label"].rstrip(" *"))
        _p_axis(ax, ps)
        a, b = summary.LINKS[link]
        ax.set(yscale="log", xlabel="workers P", ylabel="modelled exchange time per step (ms)",
               title=f"{link} (alpha {a * 1e6:g} us, beta {b * 1e9:g} ns/B), {what}")
        ax.title.set_fontsize(9)
        ax.grid(alpha=0.3, which="both")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


FIGURES = {"table3.png": ("table3", _table3), "fig14.png": ("fig14", _fig14),
           "bytes_vs_p.png": (None, _bytes), "gtopk_convergence.png": ("gtopk", _gtopk),
           "random_block.png": ("random_block", _random_block),
           "scalecom_filter.png": ("scalecom", _scalecom),
           "summary_time.png": ("summary", _summary)}


def draw(results: dict, out: Path) -> list:
    """Every figure into `out`; returns their paths."""
    plt = _plt()
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, (key, fn) in FIGURES.items():
        fn(plt, results if key is None else results[key], out / name)
        plt.close("all")
        paths.append(out / name)
    return paths
