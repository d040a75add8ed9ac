"""The demo's figures (`make demo`): the gradients' histogram against the band limits,
and the summary of both codecs (code shares, ratios, max error per band vs the bound)."""

from __future__ import annotations

import numpy as np

from inceptionn import golden

__all__ = ["plot_gradients", "plot_summary"]

_BAND_COLORS = {2: "tab:green", 10: "tab:blue", 18: "tab:orange", 34: "tab:red"}


def plot_gradients(grads, ks, path):
    """Histogram of log2 |gradient| per capture with each bound's band limits."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 4.5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    bins = np.arange(-40, 2, 0.5)
    for name, g in grads.captures.items():
        a = np.abs(g.astype(np.float64))
        a = a[a > 0]
        ax.hist(np.log2(a), bins=bins, histtype="step", linewidth=1.4,
                label=f"{name} (step {grads.steps[name]}, {np.mean(g == 0):.1%} exact zeros)")
    colors = ["tab:red", "tab:purple", "tab:gray"]
    for c, k in zip(colors, ks):
        t, m = golden.band_limits(k)
        ax.axvline(t - 127, color=c, linestyle="--", linewidth=1,
                   label=f"2^-{k}: 0-bit below 2^{t - 127}, 16-bit from 2^{m - 127}")
        ax.axvline(m - 127, color=c, linestyle=":", linewidth=1)
    ax.set_xlabel("log2 |gradient|")
    ax.set_ylabel("values")
    ax.set_title(f"HDC gradients ({grads.captures[next(iter(grads.captures))].size} values per capture)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot_summary(rows, path):
    """One figure: Table III code shares and compression ratios (the same for both codecs:
    same tags, same bytes; shown for the first codec's rows), and the max error per band
    against the bound for each codec (version 1 solid, version 2 dashed)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 5))
    FigureCanvasAgg(fig)
    ax1, ax2, ax3 = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.3, 1.3, 1]})
    first = [r for r in rows if r.codec == rows[0].codec]
    labels = [f"2^-{r.k}\n{r.capture}" for r in first]
    x = np.arange(len(first))
    bottom = np.zeros(len(first))
    for bits, name in ((2, "0-bit"), (10, "8-bit"), (18, "16-bit"), (34, "32-bit")):
        share = np.array([r.share[bits] for r in first]) * 100
        ax1.bar(x, share, bottom=bottom, color=_BAND_COLORS[bits], label=f"{name} ({bits} bits with tag)")
        bottom += share
    ax1.set_xticks(x, labels, fontsize=7)
    ax1.set_ylabel("% of values")
    ax1.set_title("Table III: code shares per bound and capture")
    ax1.set_ylim(0, 100)
    ax1.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    w = 0.28
    for i, (attr, name) in enumerate((("payload_ratio", "payload"), ("wire_ratio", "frame bytes"),
                                      ("link_ratio", "10G link time"))):
        ax2.bar(x + (i - 1) * w, [getattr(r, attr) for r in first], w, label=name)
    ax2.set_xticks(x, labels, fontsize=7)
    ax2.set_ylabel("times fewer bytes")
    ax2.set_title("compression ratio on the wire (both codecs)")
    ax2.legend(fontsize=7)
    ks = sorted({r.k for r in rows})
    styles = {"paper": ("o-", "paper (v1)"), "bounded": ("s--", "bounded (v2)")}
    for codec in dict.fromkeys(r.codec for r in rows):
        mine = [r for r in rows if r.codec == codec]
        style, tag = styles[codec]
        for bits, name in ((2, "0-bit"), (10, "8-bit"), (18, "16-bit")):
            err = np.array([max(r.max_error_by_band[bits] for r in mine if r.k == k) for k in ks])
            # 0: the band is empty (or exact) at that bound: no point on a log axis
            ax3.plot(ks, np.where(err > 0, err, np.nan), style, color=_BAND_COLORS[bits],
                     label=f"{tag} {name}")
        if codec == "bounded":
            worst = [max(r.max_abs_error for r in mine if r.k == k) for k in ks]
            ax3.plot(ks, worst, "D-", color="black", markerfacecolor="none", linewidth=0.8,
                     label="bounded (v2) max over all")
    ax3.plot(ks, [2.0 ** -k for k in ks], "k:", label="bound 2^-k")
    ax3.set_yscale("log", base=2)
    ax3.set_xticks(ks, [f"2^-{k}" for k in ks])
    ax3.set_xlabel("error bound")
    ax3.set_ylabel("max |error|")
    ax3.set_title("max error per band vs the bound")
    ax3.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
