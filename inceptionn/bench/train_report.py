"""The report of `inceptionn bench train`: its tables, the issue's targets next to
the figures, and the plot."""

from __future__ import annotations

import subprocess

from .train_methods import NIC_METHOD, RUN_METHODS

__all__ = ["codec_line", "fmt_rate", "report", "report_compare", "series", "plot"]


def fmt_rate(g):
    return "unlimited" if g is None else f"{g:g} Gb/s"


def report(results, out=print):
    out(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    out(codec_line())
    for world in sorted({w for w, _ in results}):
        out(f"\nP = {world} (per host, MTU 9000)")
        out(f"{'rate':>10} {'method':>14} {'step s':>8} {'hook s':>8} {'wire MB/step':>13} "
            f"{'acc':>6} {'CPU s/step':>10} {'(sys)':>6}")
        for (w, g), res in sorted(results.items(), key=lambda kv: (kv[0][0], kv[0][1] or 1e9)):
            if w != world:
                continue
            for m, r in res.items():
                paths = ", ".join(f"{p} {n / 1e6:.1f}M values"
                                  for p, n in sorted(r.get("paths", {}).items()))
                out(f"{fmt_rate(g):>10} {m:>14} {r['step_s']:8.3f} {r['hook_s']:8.3f} "
                    f"{r['tx_bytes_per_step'] / 1e6:13.2f} {r['accuracy']:6.1%} {_cpu(r)}"
                    f"{'  decided: ' + paths if paths else ''}"
                    f"{' (' + r['config']['config'] + ')' if r.get('config') else ''}")
    _report_default(results, out)
    # An earlier issue's targets, for the hook at the absolute bound ("ours-bounded"),
    # which decides its paths as the default does (decide.py)
    out("\nTargets of the absolute bound 2^-10 (ours-bounded, deciding its paths; ratio < 1 "
        "meets, > 1 misses by that factor):")
    for (w, g), res in results.items():
        if "ours-bounded" not in res:
            continue
        ours = res["ours-bounded"]
        if "gloo" not in res:           # --methods without gloo: no baseline, no ratios
            out(f"  P={w} {fmt_rate(g)}: no gloo run here, so no targets")
            continue
        if g is not None and g <= 2.5:
            r = ours["step_s"] / res["gloo"]["step_s"]
            out(f"  P={w} {fmt_rate(g)}: absolute bound vs gloo step time {r:.2f}"
                f"{'' if r < 1 else '  MISSED'}")
        if g is not None and g <= 1.0 and "fp16" in res:
            r = ours["step_s"] / res["fp16"]["step_s"]
            out(f"  P={w} {fmt_rate(g)}: absolute bound vs fp16 step time {r:.2f}"
                f"{'' if r < 1 else '  MISSED'}")
        if "ours-nic" in res and "fp16" in res and "gloo" in res:
            r = res["ours-nic"]["step_s"] / res["fp16"]["step_s"]
            out(f"  P={w} {fmt_rate(g)}: NIC path vs fp16 step time {r:.2f} (vs gloo "
                f"{res['ours-nic']['step_s'] / res['gloo']['step_s']:.2f})")
        if g == 1.0:
            wire = ours["tx_bytes_per_step"] / w * 8 / 1e9      # one host's bytes at its rate
            r = ours["hook_s"] / wire / 1.5 if wire else float("nan")
            out(f"  P={w} 1 Gb/s: absolute-bound hook time {ours['hook_s']:.3f} s vs its bytes' wire "
                f"time {wire:.3f} s: {ours['hook_s'] / wire:.2f}x (target 1.5x: {r:.2f})")
        if g is None:
            acc = (res["gloo"]["accuracy"] - ours["accuracy"]) * 100
            out(f"  P={w} accuracy: absolute bound {ours['accuracy']:.1%} vs gloo "
                f"{res['gloo']['accuracy']:.1%}: {acc:+.1f} points below (target 0.5)")
            if "ours-emulate" in res:
                r = res["ours-emulate"]["hook_s"] / res["gloo"]["hook_s"] / 1.5
                out(f"  P={w} unlimited: emulated hook {res['ours-emulate']['hook_s']:.3f} s vs "
                    f"gloo's {res['gloo']['hook_s']:.3f} s (target 1.5x: {r:.2f})")


def _cpu(r) -> str:
    """Every rank's CPU seconds per timed step (user and system), and the system's part;
    blank for results written before they were counted."""
    if "cpu_user_s_per_step" not in r:
        return f"{'':>10} {'':>6}"
    user, sys_ = r["cpu_user_s_per_step"], r["cpu_sys_s_per_step"]
    return f"{user + sys_:10.3f} {sys_:6.3f}"


def _report_default(results, out) -> None:
    """The issue's targets for the default hook (`IncState()`, "ours"): step time <= 1.05x
    gloo's at every rate, <= 0.5x gloo's at 1 Gb/s and below, <= fp16's at 2.5 Gb/s and
    below; each ratio from rows run in the same configuration."""
    rows = [((w, g), res) for (w, g), res in sorted(
        results.items(), key=lambda kv: (kv[0][0], kv[0][1] or 1e9)) if "ours" in res]
    if not rows:
        return
    out("\nTargets for the default hook (IncState(), \"ours\"; ratio of step times, "
        "same run):")
    for (w, g), res in rows:
        t = res["ours"]["step_s"]
        parts = []
        for base, limit, applies in (("gloo", 1.05, True),
                                     ("gloo", 0.5, g is not None and g <= 1.0),
                                     ("fp16", 1.0, g is not None and g <= 2.5)):
            if applies and base in res:
                r = t / res[base]["step_s"]
                parts.append(f"vs {base} {r:.2f} (<= {limit}{'' if r <= limit else ': MISSED'})")
        if "ours-ring" in res:
            parts.append(f"vs every bucket coded {t / res['ours-ring']['step_s']:.2f}")
        if "none" in res and "gloo" in res:
            # No method's step goes below the one that exchanges nothing.
            f = res["none"]["step_s"] / res["gloo"]["step_s"]
            reach = ("" if g is None or g > 1.0 or f <= 0.5 else
                     ": 0.5 is out of reach on this machine")
            parts.append(f"no exchange vs gloo {f:.2f}{reach}")
        out(f"  P={w} {fmt_rate(g)}: " + ("; ".join(parts) or "no baseline in this run"))


def series(results, world):
    """{method: [(rate, step s), ...]} at world size ``world`` over the limited rates, for
    every method that ran (the defaults' "ours" and the emulated ring too), in one order."""
    rates = sorted(g for (w, g) in results if w == world and g is not None)
    out = {}
    for m in RUN_METHODS + (NIC_METHOD,):
        pts = [(g, results[(world, g)][m]["step_s"]) for g in rates if m in results[(world, g)]]
        if pts:
            out[m] = pts
    return out


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    worlds = sorted({w for w, _ in results})
    fig, axes = plt.subplots(1, len(worlds), figsize=(6 * len(worlds), 4.2), squeeze=False)
    for ax, world in zip(axes[0], worlds):
        for m, pts in series(results, world).items():
            ax.plot(*zip(*pts), marker="o", label=m)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("wire rate per host (Gb/s, tc tbf)")
        ax.set_ylabel("step time (s)")
        ax.set_title(f"12.2M-parameter MLP, P = {world}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def codec_line() -> str:
    """Which codec kernel the ranks ran (they inherit INCEPTIONN_CODEC_KERNEL) and which
    the host could: the ring's step depends on it."""
    from ..golden import fast_host
    return (f"codec kernel: {fast_host.choose_kernel()} (this CPU runs "
            f"{', '.join(fast_host.host_kernels())}; {fast_host.ENV} picks one)")


def report_compare(results, steps, out=print):
    """The comparison's table and the issue's targets for the default hook ("ours"):
    within 0.5 points of gloo's accuracy, at least 5x fewer wire bytes than gloo."""
    out(f"\nAccuracy after the same steps ({', '.join(f'{m} {n}' for m, n in steps.items())}), "
        "unlimited wire; bytes vs gloo's")
    out(f"{'P':>2} {'model':>5} {'loss':>4} {'method':>13} {'acc':>6} {'wire MB/step':>13} "
        f"{'x fewer':>8} {'hook s':>7}")
    for (w, model, red), res in sorted(results.items()):
        gb = res["gloo"]["tx_bytes_per_step"]
        for m, r in res.items():
            out(f"{w:>2} {model:>5} {red:>4} {m:>13} {r['accuracy']:6.1%} "
                f"{r['tx_bytes_per_step'] / 1e6:13.3f} {gb / r['tx_bytes_per_step']:8.2f} "
                f"{r['hook_s']:7.3f}")
    out("\nTargets for IncState() (\"ours\"): within 0.5 points of gloo, >= 5x fewer bytes:")
    for (w, model, red), res in sorted(results.items()):
        if "ours" not in res or "gloo" not in res:
            continue
        ours, gloo = res["ours"], res["gloo"]
        pts = (gloo["accuracy"] - ours["accuracy"]) * 100
        fewer = gloo["tx_bytes_per_step"] / ours["tx_bytes_per_step"]
        ok = pts <= 0.5 and fewer >= 5
        out(f"  P={w} {model} loss {red}: {ours['accuracy']:.1%} vs gloo {gloo['accuracy']:.1%} "
            f"({pts:+.1f} points below), {fewer:.1f}x fewer bytes{'' if ok else '  MISSED'}")
