"""DDP training over slow wires, the comparison a user would make (`make bench-train`).

The benchmark is inceptionn.bench.train (the grid, its ranks, its report); this
module is its command line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..bench.train import DEFAULT_JSON, Saved, compare_methods, compare_steps, run_grid
from ..bench.train_methods import ACCURACY_METHODS, EMULATE_METHODS, METHODS, MODELS, NIC_METHOD, NIC_RATES, REDUCTIONS, RUN_METHODS
from .checks import int_in, int_list, positive_float


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
    ap.add_argument("--steps", type=int_in(1), default=8,
                    help="timed steps per method and rate (their median is reported)")
    ap.add_argument("--warmup", type=int_in(0), default=2)
    ap.add_argument("--block", type=int_in(0), default=2,
                    help="timed steps per block: the methods' blocks interleave, the order "
                         "rotating, each block led by an untimed step; 0: one method "
                         "after another")
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


# The options that make a run the full grid; the committed figures are only the full grid's.
_GRID_OPTIONS = ("methods", "steps", "warmup", "block", "accuracy_steps", "batch", "worlds", "rates",
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


def run(args) -> int:
    if args.worker:
        from ..bench.train_rank import worker
        print(json.dumps(worker(args)))
        return 0
    from inceptionn.drivers.netns import netns_available
    why = netns_available()
    if why:
        print(f"bench-train needs network namespaces: {why}", file=sys.stderr)
        return 2
    try:
        steps = compare_steps(args.compare_steps)
        methods = compare_methods(args.compare_methods)
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
        run_grid(args, steps, methods, saved)
    except BaseException:
        if saved.results or saved.compared:
            print(f"bench-train: stopped; the results so far are in {saved.path}", file=sys.stderr)
        raise
    saved.done()
    return 0
