"""DDP training over slow wires, the comparison a user would make (`make bench-train`).

P = 2 and 4 ranks, each in its own network namespace, joined by veth pairs to a Linux
bridge in a switch namespace; each host's egress is a `tc tbf` at 0.1, 0.5, 1, 2.5 and
10 Gb/s, or unlimited. A 12.2M-parameter MLP (64-3000-3000-1000-10) on scikit-learn's
8x8 digits (offline), each rank its own shard. Methods: gloo's all-reduce (through
PyTorch's allreduce_hook, so that it is timed the same way), PyTorch's fp16 hook,
PowerSGD at rank 1 and 4, and ours: the hook's defaults (`IncState()`, deciding per
bucket between the software-compressed ring and gloo's all-reduce, timed after its first
decision; "ours-ring", not in the default grid: every bucket coded), the ring at the
absolute bound 2^-10 with the bounded and the paper codecs, plus the emulated ring
(float32 on the wire) on the unlimited wire.

Per method: hook time per step (per bucket, from the hook's call to its Future's
completion, summed), step time, bytes on the wire per step (tx_bytes of every host's
interface, summed, divided by the steps), and test accuracy after a fixed number of
steps on the unlimited wire. The issue's targets are printed next to the figures with
the miss ratio. Needs root (namespaces, veth, tc).

The NIC path ("ours-nic": the hook's float32 on tagged sockets, the bounded codec applied
by the software NIC's engines on the way) runs in the bridge's own hosts (`inceptionn nic
bridge`'s namespaces, its per-port token bucket at the rate instead of tc) at the rates
in NIC_RATES. A rate limit needs the bridge's Python switch (one thread); unlimited, the
compiled switch runs (make bench-nic measures both). Its wire bytes are the hosts'
float32 bytes divided by the wire ratio the bridge counted over the run.

The accuracy comparison (first, on the unlimited wire; `--only-compare` runs it alone):
the hook's defaults with every bucket coded (`IncState(decide="ring")`: scale-following
bound, error feedback; on that wire `IncState()` would hand the buckets to gloo's
all-reduce, whose accuracy is gloo's) and the absolute bound alone, next to gloo, fp16 and PowerSGD, with the loss summed and
averaged over the batch (the same update: the mean's learning rate is `batch` times the
sum's), on the MLP and on the study's LeNet-like CNN (study/models.py), the same seed
and batches for every method; test accuracy after `--compare-steps` and wire bytes.
`--compare-methods` picks the methods, also the NIC path's numbers on the emulated wire
("ours-emulate-default": `IncState(wire="emulate")`; "ours-emulate": absolute bound).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from ..drivers.collectives.decide import PATHS, PROBES
from .bench_train_net import Network, NicNetwork
from .checks import int_in, int_list, positive_float

RATES = (0.1, 0.5, 1.0, 2.5, 10.0, None)        # Gb/s per host; None: unlimited
WORLDS = (2, 4)
# The timed grid: "ours" is the hook as a user registers it (`IncState()`), "ours-bounded"
# and "ours-paper" the absolute bound with each codec (the targets are the
# bounded one's).
METHODS = ("gloo", "fp16", "powersgd1", "powersgd4", "ours", "ours-bounded", "ours-paper")
# The accuracy comparison: `IncState()` ("ours": scale-following bound, error feedback)
# and the absolute bound alone ("ours-bounded"), next to gloo, fp16 and PowerSGD, with
# the loss summed and averaged over the batch, on the MLP and the study's CNN.
ACCURACY_METHODS = ("gloo", "fp16", "powersgd1", "powersgd4", "ours", "ours-bounded")
# The NIC path's numbers without a NIC (float32 on the wire, the golden roundtrip on
# receipt): its defaults ("ours-emulate-default": scaled, error feedback) against the
# absolute bound ("ours-emulate"); `--compare-methods` picks them.
EMULATE_METHODS = ("ours-emulate-default", "ours-emulate")
REDUCTIONS = ("sum", "mean")
MODELS = ("mlp", "cnn")
LOOPBACK_ONLY = ("ours-emulate",)
# Steps a deciding hook takes to its first decision: DDP's first bucket, then its probes
# (each path, ring, all-reduce and fp16, twice: decide.py).
DECIDE_STEPS = 1 + len(PATHS) * PROBES
NIC_RATES = (0.1, 1.0, None)                    # Gb/s per port; None: no rate limit
ROOT = Path(__file__).resolve().parents[2]   # the checkout (docs/ for the results)
DEFAULT_JSON = ROOT / "docs" / "results" / "bench_train.json"


# ---------------------------------------------------------------- one rank (a process)

def _model(name="mlp"):
    import torch
    from torch import nn
    torch.manual_seed(0)
    if name == "cnn":       # the study's LeNet-like CNN (study/models.py), He init
        from study.models import build, dataset
        return build("lenet", dataset("digits"), seed=0)
    return nn.Sequential(nn.Linear(64, 3000), nn.ReLU(), nn.Linear(3000, 3000), nn.ReLU(),
                         nn.Linear(3000, 1000), nn.ReLU(), nn.Linear(1000, 10))


def _timed_hook(hook, times):
    """hook, with the time from each call to its Future's completion added to `times`."""
    def timed(state, bucket):
        t0 = time.perf_counter()
        fut = hook(state, bucket)

        def done(f):
            times.append(time.perf_counter() - t0)
            return f.value()
        return fut.then(done)
    return timed


def _register(net, method, decide="auto"):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

    from inceptionn.ddp_hook import IncState, inc_allreduce_hook
    pg = None               # the default group
    times, state = [], None
    if method == "gloo":
        hook, st = default_hooks.allreduce_hook, pg
    elif method == "fp16":
        hook, st = default_hooks.fp16_compress_hook, pg
    elif method.startswith("powersgd"):
        st = powerSGD_hook.PowerSGDState(process_group=pg,
                                         matrix_approximation_rank=int(method[-1]),
                                         start_powerSGD_iter=2, use_error_feedback=True,
                                         warm_start=True)
        hook = powerSGD_hook.powerSGD_hook
    elif method in ("ours", "ours-ring", "ours-emulate-default"):   # the defaults, as a user
        wire = "emulate" if method == "ours-emulate-default" else "software"  # registers them
        kw = {"decide": "ring"} if "ring" in (decide, method[5:]) else {}   # every bucket coded
        st = state = IncState(wire=wire, host=os.environ.get("INCEPTIONN_HOST"), timeout_s=120,
                              **kw)
        hook = inc_allreduce_hook
    else:                           # the absolute bound 2^-10 (the paper's reproductions)
        codec = "paper" if method.endswith("paper") else "bounded"
        wire = {"ours-emulate": "emulate", "ours-nic": "nic"}.get(method, "software")
        st = state = IncState(codec=codec, wire=wire, error_bound=2 ** -10, bound="absolute",
                              host=os.environ.get("INCEPTIONN_HOST"), timeout_s=120)
        hook = inc_allreduce_hook
    net.register_comm_hook(st, _timed_hook(hook, times))
    return times, state


def _tx_bytes(ifname):
    """Bytes this namespace's interface has sent (/proc/net/dev is per namespace; /sys is
    the one mounted, the root namespace's, under nsenter)."""
    for line in Path("/proc/net/dev").read_text().splitlines()[2:]:
        name, data = line.split(":", 1)
        if name.strip() == ifname:
            return int(data.split()[8])
    raise RuntimeError(f"no interface {ifname} in this namespace")


def worker(args) -> dict:
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    sys.path.insert(0, str(ROOT / "examples"))
    from train_ddp import digits
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.model == "cnn":
        sys.path.insert(0, str(ROOT))
        from study.models import dataset
        d = dataset("digits")
        xtr, ytr, xte, yte = d.xtr, d.ytr, d.xte, d.yte
    else:
        xtr, ytr, xte, yte = digits(0)
    shard = torch.arange(rank, xtr.shape[0], world)
    xtr, ytr = xtr[shard], ytr[shard]
    out = {}
    for method in args.methods:
        # PowerSGD over gloo on CPU stalls at its first compressed step when the model
        # spans several buckets (measured here, torch 2.13): one bucket for it.
        net = DDP(_model(args.model),
                  bucket_cap_mb=64 if method.startswith("powersgd") else 25)
        times, state = _register(net, method, args.decide)
        # The same update with either reduction: the mean's gradients are `batch` times
        # smaller, its learning rate `batch` times larger.
        lr = args.lr / args.batch if args.reduction == "sum" else args.lr
        opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
        gen = torch.Generator().manual_seed(rank)
        # A hook deciding per bucket (decide="auto") probes its paths on DDP's rebuilt
        # buckets before its first decision (decide.py): timed from the step after it.
        warmup = args.warmup + (DECIDE_STEPS if state is not None
                                and state.decide == "auto" else 0)
        steps = args.steps + warmup
        step_t, hook_t = [], []
        tx0 = None
        for s in range(steps):
            if s == warmup:
                dist.barrier()
                tx0 = _tx_bytes(args.ifname)
            idx = torch.randint(0, xtr.shape[0], (args.batch,), generator=gen)
            t0 = time.perf_counter()
            times.clear()
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(xtr[idx]), ytr[idx],
                                                     reduction=args.reduction)
            loss.backward()
            opt.step()
            if s >= warmup:
                step_t.append(time.perf_counter() - t0)
                hook_t.append(sum(times))
        dist.barrier()
        tx = _tx_bytes(args.ifname) - tx0
        with torch.no_grad():
            acc = (net(xte).argmax(1) == yte).float().mean().item()
        paths: dict = {}
        if state is not None:
            for d in state.decisions:       # each bucket's decided path, values counted
                if d["agreed"]:
                    paths[d["path"]] = paths.get(d["path"], 0) + d["values"]
            state.close()
        out[method] = {"step_s": float(np.median(step_t)), "hook_s": float(np.median(hook_t)),
                       "tx_bytes_per_step": tx / args.steps, "accuracy": acc,
                       "params": sum(p.numel() for p in net.parameters()), "paths": paths}
        del net
    dist.destroy_process_group()
    return out


def run_config(net, world, gbps, methods, steps, warmup, batch, port, timeout=1800,
               extra=()):
    env = dict(os.environ, MASTER_ADDR=net.addr(0), MASTER_PORT=str(port),
               WORLD_SIZE=str(world), GLOO_SOCKET_IFNAME=net.ifname(0), OMP_NUM_THREADS="1")
    procs = []
    for r in range(world):
        argv = [sys.executable, "-m", "inceptionn", "bench", "train", "--worker",
                "--methods", ",".join(methods), "--steps", str(steps), "--warmup",
                str(warmup), "--batch", str(batch), "--ifname", net.ifname(r), *extra]
        procs.append(net.popen(r, argv, env=dict(env, RANK=str(r), INCEPTIONN_HOST=net.addr(r)),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    res, deadline = [], time.monotonic() + timeout
    try:
        for p in procs:
            try:
                out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                errs = [q.communicate()[1][-1500:] for q in procs]
                raise RuntimeError(f"P={world} {_fmt_rate(gbps)}: timed out; stderr: {errs}") \
                    from None
            if p.returncode != 0:
                raise RuntimeError(f"a rank failed ({p.returncode}): {err[-2000:]}")
            res.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    merged = {}
    for m in methods:
        merged[m] = dict(res[0][m])
        merged[m]["tx_bytes_per_step"] = sum(r[m]["tx_bytes_per_step"] for r in res)
        merged[m]["step_s"] = max(r[m]["step_s"] for r in res)
        merged[m]["hook_s"] = max(r[m]["hook_s"] for r in res)
    return merged


# ---------------------------------------------------------------- report

def _fmt_rate(g):
    return "unlimited" if g is None else f"{g:g} Gb/s"


def report(results, out=print):
    out(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    for world in sorted({w for w, _ in results}):
        out(f"\nP = {world} (per host, MTU 9000)")
        out(f"{'rate':>10} {'method':>14} {'step s':>8} {'hook s':>8} {'wire MB/step':>13} "
            f"{'acc':>6}")
        for (w, g), res in sorted(results.items(), key=lambda kv: (kv[0][0], kv[0][1] or 1e9)):
            if w != world:
                continue
            for m, r in res.items():
                paths = ", ".join(f"{p} {n / 1e6:.1f}M values"
                                  for p, n in sorted(r.get("paths", {}).items()))
                out(f"{_fmt_rate(g):>10} {m:>14} {r['step_s']:8.3f} {r['hook_s']:8.3f} "
                    f"{r['tx_bytes_per_step'] / 1e6:13.2f} {r['accuracy']:6.1%}"
                    f"{'  decided: ' + paths if paths else ''}")
    _report_default(results, out)
    out("\nTargets (the issue's; ratio < 1 meets, > 1 misses by that factor):")
    for (w, g), res in results.items():
        if "ours-bounded" not in res:
            continue
        ours = res["ours-bounded"]
        if "gloo" not in res:           # --methods without gloo: no baseline, no ratios
            out(f"  P={w} {_fmt_rate(g)}: no gloo run here, so no targets")
            continue
        if g is not None and g <= 2.5:
            r = ours["step_s"] / res["gloo"]["step_s"]
            out(f"  P={w} {_fmt_rate(g)}: bounded ring vs gloo step time {r:.2f}"
                f"{'' if r < 1 else '  MISSED'}")
        if g is not None and g <= 1.0 and "fp16" in res:
            r = ours["step_s"] / res["fp16"]["step_s"]
            out(f"  P={w} {_fmt_rate(g)}: bounded ring vs fp16 step time {r:.2f}"
                f"{'' if r < 1 else '  MISSED'}")
        if "ours-nic" in res and "fp16" in res and "gloo" in res:
            r = res["ours-nic"]["step_s"] / res["fp16"]["step_s"]
            out(f"  P={w} {_fmt_rate(g)}: NIC path vs fp16 step time {r:.2f} (vs gloo "
                f"{res['ours-nic']['step_s'] / res['gloo']['step_s']:.2f})")
        if g == 1.0:
            wire = ours["tx_bytes_per_step"] / w * 8 / 1e9      # one host's bytes at its rate
            r = ours["hook_s"] / wire / 1.5 if wire else float("nan")
            out(f"  P={w} 1 Gb/s: bounded hook time {ours['hook_s']:.3f} s vs its bytes' wire "
                f"time {wire:.3f} s: {ours['hook_s'] / wire:.2f}x (target 1.5x: {r:.2f})")
        if g is None:
            acc = (res["gloo"]["accuracy"] - ours["accuracy"]) * 100
            out(f"  P={w} accuracy: bounded {ours['accuracy']:.1%} vs gloo "
                f"{res['gloo']['accuracy']:.1%}: {acc:+.1f} points below (target 0.5)")
            if "ours-emulate" in res:
                r = res["ours-emulate"]["hook_s"] / res["gloo"]["hook_s"] / 1.5
                out(f"  P={w} unlimited: emulated hook {res['ours-emulate']['hook_s']:.3f} s vs "
                    f"gloo's {res['gloo']['hook_s']:.3f} s (target 1.5x: {r:.2f})")


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
        out(f"  P={w} {_fmt_rate(g)}: " + ("; ".join(parts) or "no baseline in this run"))


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


# Every method --methods can time (the hook each registers: _register); a rank also
# takes "ours-nic", the NIC path that --nic-rates runs.
# "ours-ring": the defaults with every bucket coded (decide="ring"), what "ours" chooses from.
RUN_METHODS = METHODS + ("ours-ring",) + EMULATE_METHODS
NIC_METHOD = "ours-nic"


def method_list(text):
    """argparse type: methods of RUN_METHODS (and the ranks' NIC_METHOD), comma-separated,
    each once."""
    methods = [m.strip() for m in str(text).split(",")]
    if not all(methods) or set(methods) - set(RUN_METHODS + (NIC_METHOD,)) \
            or len(set(methods)) < len(methods):
        raise argparse.ArgumentTypeError(f"expected any of {', '.join(RUN_METHODS)} once each, "
                                         f"comma-separated; got {text!r}")
    return methods


def rate_list(empty_ok: bool):
    """argparse type: wire rates in Gb/s (a positive number, or "unlimited": no limit),
    comma-separated; None stands for unlimited. With empty_ok, "" is no rate at all."""
    def parse(text):
        if not str(text).strip() and empty_ok:
            return []
        rates = []
        for part in (p.strip() for p in str(text).split(",")):
            try:
                g = None if part == "unlimited" else float(part)
            except ValueError:
                g = -1.0
            if g is not None and not 0 < g < float("inf"):
                raise argparse.ArgumentTypeError(
                    f"expected rates in Gb/s (numbers above 0, or unlimited), comma-separated; "
                    f"got {text!r}")
            rates.append(g)
        return rates
    return parse


def add_arguments(ap) -> None:
    """`inceptionn bench train`'s options."""
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--methods", type=method_list, default=",".join(METHODS),
                    help=f"of {', '.join(RUN_METHODS)}")
    ap.add_argument("--ifname", default="eth0", help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int_in(1), default=4, help="timed steps per method and rate")
    ap.add_argument("--warmup", type=int_in(0), default=2)
    ap.add_argument("--accuracy-steps", type=int_in(1), default=60,
                    help="steps on the unlimited wire, after which the accuracy is taken")
    ap.add_argument("--batch", type=int_in(1), default=32, help="per rank")
    ap.add_argument("--worlds", type=int_list(2, 64), default="2,4")
    ap.add_argument("--rates", type=rate_list(False), default="0.1,0.5,1,2.5,10,unlimited",
                    help="Gb/s per port, or unlimited")
    ap.add_argument("--nic-rates", type=rate_list(True),
                    default=",".join("unlimited" if g is None else f"{g:g}" for g in NIC_RATES),
                    help="rates (Gb/s per port) of the NIC path through the software NIC; "
                         "empty: none")
    ap.add_argument("--model", choices=MODELS, default="mlp", help=argparse.SUPPRESS)
    # The accuracy comparison's "ours" codes every bucket: on its unlimited wire the
    # default would hand them to gloo's all-reduce, and the question is the coding's.
    ap.add_argument("--decide", choices=("auto", "ring"), default="auto", help=argparse.SUPPRESS)
    ap.add_argument("--reduction", choices=REDUCTIONS, default="sum", help=argparse.SUPPRESS)
    ap.add_argument("--lr", type=positive_float, default=0.05, help="per example (the sum's)")
    ap.add_argument("--compare-worlds", type=lambda t: int_list(2, 64)(t) if t else [],
                    default="2",
                    help="ranks of the accuracy comparison (the loss summed and averaged, "
                         "both models, ACCURACY_METHODS, unlimited wire); empty: none")
    ap.add_argument("--compare-steps", default="mlp:60,cnn:300",
                    help="steps per model in the accuracy comparison")
    ap.add_argument("--compare-methods", default=",".join(ACCURACY_METHODS),
                    help="methods of the accuracy comparison (gloo first; also "
                         f"{', '.join(EMULATE_METHODS)})")
    ap.add_argument("--only-compare", action="store_true",
                    help="the accuracy comparison alone (no rates, no NIC path)")
    ap.add_argument("--json", default=str(DEFAULT_JSON),
                    help="where the results go (the accuracy comparison's: beside it, "
                         "bench_train_accuracy.json; the results so far, while it runs: "
                         "the .partial.json beside it); default: the committed figures, "
                         "which only the full grid may replace")
    ap.add_argument("--plot", default=None,
                    help="the plot; default: docs/img/bench_train.png with the default "
                         "--json, else the --json path with .png")


def _plot_path(args):
    """--plot, or its default: the committed plot beside the committed figures, else
    beside the given --json (a trial run never overwrites the committed plot)."""
    if args.plot:
        return args.plot
    if Path(args.json) == DEFAULT_JSON:
        return str(ROOT / "docs" / "img" / "bench_train.png")
    return str(Path(args.json).with_suffix(".png"))


def _write_accuracy(args, compared):
    """The accuracy comparison beside --json; nothing when none ran (an empty run must
    not replace the figures of an earlier one)."""
    if not compared:
        return
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).with_name("bench_train_accuracy.json").write_text(json.dumps(
        {f"{w}/{m}/{r}": res for (w, m, r), res in compared.items()}, indent=1))


def _compare_steps(text):
    try:
        steps = {m: int(n) for m, n in (kv.split(":") for kv in text.split(","))}
    except ValueError:
        raise ValueError(f"--compare-steps takes model:steps pairs, got {text!r}") from None
    if set(steps) - set(MODELS) or min(steps.values()) < 1:
        raise ValueError(f"--compare-steps: models are {MODELS}, steps >= 1; got {text!r}")
    return steps


def _compare_methods(text):
    methods = tuple(text.split(","))
    known = ACCURACY_METHODS + EMULATE_METHODS
    if set(methods) - set(known) or methods[0] != "gloo" or len(set(methods)) < len(methods):
        raise ValueError(f"--compare-methods: gloo first, then any of {known[1:]} once; "
                         f"got {text!r}")
    return methods


def compare(worlds, steps, warmup, batch, port, methods=ACCURACY_METHODS, out=None,
            saved=lambda: None):
    """The accuracy comparison: {(world, model, reduction): {method: row}}, into `out`
    (a dict) as each configuration ends, `saved` called after each."""
    out = {} if out is None else out
    for world in worlds:
        net = Network(world)
        try:
            net.rate(None)
            for model, n in steps.items():
                for red in REDUCTIONS:
                    t0 = time.monotonic()
                    port += 1
                    out[(world, model, red)] = run_config(
                        net, world, None, methods, n, warmup, batch, port,
                        extra=("--model", model, "--reduction", red, "--decide", "ring"))
                    saved()
                    print(f"P={world} {model} loss {red}: {time.monotonic() - t0:.0f} s",
                          flush=True)
        finally:
            net.close()
    return out


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


# The options that make a run the full grid; the committed figures are only the full grid's.
_GRID_OPTIONS = ("methods", "steps", "warmup", "accuracy_steps", "batch", "worlds", "rates",
                 "nic_rates", "lr", "compare_worlds", "compare_steps", "compare_methods",
                 "only_compare")


_COMPARE_OPTIONS = ("warmup", "batch", "compare_worlds", "compare_steps", "compare_methods")


def partial_options(args) -> list[str]:
    """The options in which args differ from the full grid (`make bench-train`'s); with
    --only-compare, from the full accuracy comparison's (it replaces only its own file)."""
    ap = argparse.ArgumentParser()
    add_arguments(ap)
    full = ap.parse_args([])
    return [o for o in (_COMPARE_OPTIONS if args.only_compare else _GRID_OPTIONS)
            if getattr(args, o) != getattr(full, o)]


class Saved:
    """The results so far, rewritten whole (write and rename) after each configuration
    to <--json>.partial.json, so that a run that dies keeps what it measured; at the end
    the final files replace it."""

    def __init__(self, path):
        self.path = Path(path).with_suffix(".partial.json")
        self.results, self.compared = {}, {}

    def __call__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({
            "results": {f"{w}/{g}": r for (w, g), r in self.results.items()},
            "accuracy": {f"{w}/{m}/{r}": res for (w, m, r), res in self.compared.items()}},
            indent=1))
        os.replace(tmp, self.path)

    def done(self):
        self.path.unlink(missing_ok=True)


def run(args) -> int:
    if args.worker:
        print(json.dumps(worker(args)))
        return 0
    from inceptionn.drivers.netns import netns_available
    why = netns_available()
    if why:
        print(f"bench-train needs network namespaces: {why}", file=sys.stderr)
        return 2
    try:
        compare_steps = _compare_steps(args.compare_steps)
        methods = _compare_methods(args.compare_methods)
    except ValueError as e:
        print(f"bench-train: {e}", file=sys.stderr)
        return 2
    if NIC_METHOD in args.methods:
        print(f"bench-train: {NIC_METHOD} is the NIC path: --nic-rates runs it", file=sys.stderr)
        return 2
    partial = partial_options(args)
    if partial and Path(args.json).resolve() == DEFAULT_JSON.resolve():
        print(f"bench-train: a partial run (--{', --'.join(o.replace('_', '-') for o in partial)} "
              f"not the full grid's) would replace the committed figures in {DEFAULT_JSON.parent}; "
              f"give --json PATH", file=sys.stderr)
        return 2
    saved = Saved(args.json)
    try:
        _run(args, compare_steps, methods, saved)
    except BaseException:
        if saved.results or saved.compared:
            print(f"bench-train: stopped; the results so far are in {saved.path}", file=sys.stderr)
        raise
    saved.done()
    return 0


def _run(args, compare_steps, methods, saved):
    """run's grid: the accuracy comparison, then every world and rate, then the NIC path,
    each configuration saved as it ends; the report and the final files at the end."""
    results, compared, port = saved.results, saved.compared, 29600
    compare(args.compare_worlds, compare_steps, args.warmup, args.batch, 29400, methods,
            out=compared, saved=saved)
    if compared:
        report_compare(compared, compare_steps)
    if args.only_compare:
        _write_accuracy(args, compared)
        return
    for world in args.worlds:
        net = Network(world)
        try:
            for g in args.rates:
                net.rate(g)
                timed = args.methods + [m for m in LOOPBACK_ONLY
                                        if g is None and m not in args.methods]
                n = args.accuracy_steps if g is None else args.steps
                t0 = time.monotonic()
                port += 1
                results[(world, g)] = run_config(net, world, g, timed, n, args.warmup,
                                                 args.batch, port)
                saved()
                print(f"P={world} {_fmt_rate(g)}: {time.monotonic() - t0:.0f} s", flush=True)
        finally:
            net.close()
        for g in args.nic_rates:
            t0 = time.monotonic()
            port += 1
            nic = NicNetwork(world, g)
            try:
                res = run_config(nic, world, g, [NIC_METHOD], args.steps, args.warmup,
                                 args.batch, port)[NIC_METHOD]
                res["wire_ratio"] = nic.wire_ratio()
                res["tx_bytes_per_step"] /= res["wire_ratio"]   # the compressed wire's bytes
            finally:
                nic.close()
            results.setdefault((world, g), {})[NIC_METHOD] = res
            saved()
            print(f"P={world} {_fmt_rate(g)} NIC path: {time.monotonic() - t0:.0f} s "
                  f"(wire ratio {res['wire_ratio']:.2f})", flush=True)
    report(results)
    if compared:
        report_compare(compared, compare_steps)
    _write_accuracy(args, compared)
    if not results:
        return
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({f"{w}/{g}": r for (w, g), r in results.items()},
                                          indent=1))
    plot(results, _plot_path(args))
    print(f"wrote {args.json} and {_plot_path(args)}")
