"""DDP training over slow wires, the comparison a user would make (`make bench-train`).

P = 2 and 4 ranks, each in its own network namespace, joined by veth pairs to a Linux
bridge in a switch namespace; each host's egress is a `tc tbf` at 0.1, 0.5, 1, 2.5 and
10 Gb/s, or unlimited. A 12.2M-parameter MLP (64-3000-3000-1000-10) on scikit-learn's
8x8 digits (offline), each rank its own shard. Methods: gloo's all-reduce (through
PyTorch's allreduce_hook, so that it is timed the same way), PyTorch's fp16 hook,
PowerSGD at rank 1 and 4, and ours: the hook's defaults (`IncState()`, putting each
bucket on the software-compressed ring, gloo's all-reduce or its fp16 all-reduce by the
steps each gives, timed after its first decision; "ours-ring", not in the default grid:
every bucket coded), the hook at the absolute bound 2^-10 with the bounded and the paper
codecs (deciding its paths the same way), plus the emulated ring
(float32 on the wire) on the unlimited wire.

Per method: hook time per step (per bucket, from the hook's call to its Future's
completion, summed), step time, bytes on the wire per step (tx_bytes of every host's
interface, summed, divided by the steps), CPU seconds per step (every rank's user and
system time over its timed steps, summed: on hosts that share cores, the step of a
CPU-bound method is about this over the cores), and test accuracy after a fixed number of
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

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from .train_methods import ACCURACY_METHODS, EMULATE_METHODS, LOOPBACK_ONLY, MODELS, NIC_METHOD, REDUCTIONS
from .train_net import Network, NicNetwork
from .train_report import codec_line, fmt_rate, plot, report, report_compare

__all__ = ["ROOT", "DEFAULT_JSON", "run_config", "compare", "Saved", "run_grid",
           "compare_steps", "compare_methods", "plot_path", "write_accuracy"]

ROOT = Path(__file__).resolve().parents[2]   # the checkout (docs/ for the results)

DEFAULT_JSON = ROOT / "docs" / "results" / "bench_train.json"


def run_config(net, world, gbps, methods, steps, warmup, batch, port, timeout=1800,
               extra=(), block=0):
    env = dict(os.environ, MASTER_ADDR=net.addr(0), MASTER_PORT=str(port),
               WORLD_SIZE=str(world), GLOO_SOCKET_IFNAME=net.ifname(0), OMP_NUM_THREADS="1")
    procs = []
    for r in range(world):
        argv = [sys.executable, "-m", "inceptionn", "bench", "train", "--worker",
                "--methods", ",".join(methods), "--steps", str(steps), "--warmup",
                str(warmup), "--block", str(block), "--batch", str(batch), "--ifname",
                net.ifname(r), *extra]
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
                raise RuntimeError(f"P={world} {fmt_rate(gbps)}: timed out; stderr: {errs}") \
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
        for key in ("tx_bytes_per_step", "cpu_user_s_per_step", "cpu_sys_s_per_step"):
            merged[m][key] = sum(r[m].get(key, 0.0) for r in res)    # every rank's
        merged[m]["step_s"] = max(r[m]["step_s"] for r in res)
        merged[m]["hook_s"] = max(r[m]["hook_s"] for r in res)
    return merged


def compare_steps(text):
    try:
        steps = {m: int(n) for m, n in (kv.split(":") for kv in text.split(","))}
    except ValueError:
        raise ValueError(f"--compare-steps takes model:steps pairs, got {text!r}") from None
    if set(steps) - set(MODELS) or min(steps.values()) < 1:
        raise ValueError(f"--compare-steps: models are {MODELS}, steps >= 1; got {text!r}")
    return steps


def compare_methods(text):
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


def plot_path(args):
    """--plot, or its default: the committed plot beside the committed figures, else
    beside the given --json (a trial run never overwrites the committed plot)."""
    if args.plot:
        return args.plot
    if Path(args.json) == DEFAULT_JSON:
        return str(ROOT / "docs" / "img" / "bench_train.png")
    return str(Path(args.json).with_suffix(".png"))


def write_accuracy(args, compared):
    """The accuracy comparison beside --json; nothing when none ran (an empty run must
    not replace the figures of an earlier one)."""
    if not compared:
        return
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).with_name("bench_train_accuracy.json").write_text(json.dumps(
        {f"{w}/{m}/{r}": res for (w, m, r), res in compared.items()}, indent=1))


def run_grid(args, steps, methods, saved):
    """run's grid: the accuracy comparison, then every world and rate, then the NIC path,
    each configuration saved as it ends; the report and the final files at the end."""
    results, compared, port = saved.results, saved.compared, 29600
    print(codec_line(), flush=True)
    compare(args.compare_worlds, steps, args.warmup, args.batch, 29400, methods,
            out=compared, saved=saved)
    if compared:
        report_compare(compared, steps)
    if args.only_compare:
        write_accuracy(args, compared)
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
                                                 args.batch, port, block=args.block)
                saved()
                print(f"P={world} {fmt_rate(g)}: {time.monotonic() - t0:.0f} s", flush=True)
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
            print(f"P={world} {fmt_rate(g)} NIC path: {time.monotonic() - t0:.0f} s "
                  f"(wire ratio {res['wire_ratio']:.2f})", flush=True)
    report(results)
    if compared:
        report_compare(compared, steps)
    write_accuracy(args, compared)
    if not results:
        return
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({f"{w}/{g}": r for (w, g), r in results.items()},
                                          indent=1))
    plot(results, plot_path(args))
    print(f"wrote {args.json} and {plot_path(args)}")
