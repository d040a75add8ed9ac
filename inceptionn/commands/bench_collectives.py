"""The paper's Fig. 12 and Fig. 15 on the software NIC (`make bench-collectives`).

The measurement is inceptionn.bench.collectives; this module is its command line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from pathlib import Path

from ..bench.collectives import HDC_FLOATS, next_to_paper, plots, sweep, table, verdicts
from ..drivers.bridge import RATE_GBPS
from ..drivers.collectives.transports.wa import SCHEDULES
from ..drivers.netns import netns_available
from .args import add_offload_arg, offload_setting
from .checks import float_in, int_in, int_list


def _rates(text):
    one = float_in(*RATE_GBPS)
    parts = [q.strip() for q in str(text).split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"expected Gb/s values separated by commas, such as "
                                         f"0.05,1; got {text!r}")
    return [one(q) for q in parts]


def add_arguments(ap) -> None:
    """`inceptionn bench collectives`'s options."""
    ap.add_argument("--rate", dest="rates", type=_rates, default=[0.05, 1.0],
                    help="wire Gb/s per port; a list (0.05,1, the default) gives one row set "
                         "per rate")
    ap.add_argument("--iters", type=int_in(1), default=2)
    ap.add_argument("--ps", type=int_list(2, 8), default=[2, 4, 8],
                    help="worker counts (default 2,4,8)")
    ap.add_argument("--quick", action="store_true",
                    help="3.2 MB only (no 25 MB rows: at 0.05 Gb/s the paper's WA at P = 8 "
                         "takes over 60 s an iteration)")
    ap.add_argument("--wa", choices=SCHEDULES, default="sequential",
                    help="WA's schedule: sequential (the paper's: every gradient in, then the "
                         "sum back; the default) or pipelined (the legs overlap, chunk by chunk)")
    add_offload_arg(ap)
    ap.add_argument("--out", type=Path, default=Path("build/bench_collectives"))


def run(args) -> int:
    why = netns_available()
    if why is not None:
        print(f"bench-collectives needs network namespaces: {why}", file=sys.stderr)
        return 2
    sizes = [(HDC_FLOATS, tuple(args.ps))]
    if not args.quick:
        sizes.append((25_000_000 // 4, tuple(args.ps)))
    met_all = True
    for rate in args.rates:
        t0 = time.perf_counter()
        load0 = os.getloadavg()[0]
        points, (a, b, g, k) = sweep(sizes, tuple(args.ps), rate_gbps=rate, iters=args.iters,
                                     schedule=args.wa,
                                     offload=offload_setting(args))
        print(f"\nwire rate {rate:g} Gb/s per port, MTU 9000, 2^-10, real HDC gradients, WA "
              f"{args.wa}, TAP offloads {args.offload}, median of {args.iters} iterations; "
              f"{time.perf_counter() - t0:.0f} s; load average "
              f"{load0:.1f} before, {os.getloadavg()[0]:.1f} after")
        print(f"fitted model: alpha = {a * 1e3:.2f} ms, beta = {b * 1e9:.2f} ns/byte "
              f"({8 / b / 1e9 if b else math.inf:.3f} Gb/s against {rate:g} configured), "
              f"gamma = {g * 1e9:.2f} ns/byte, kappa = {k:.2f} s per CPU second "
              + (f"({1 / k:.2f} cores' worth on {os.cpu_count()})" if k else "(no row CPU-bound)"))
        print(table(points))
        for line in next_to_paper(points):
            print(f"  {line}")
        for met, line in verdicts(points):
            met_all &= met
            print(f"  {'met   ' if met else 'MISSED'} {line}")
        tag = f"_{rate:g}gbps"
        plots(points, args.out, tag)
        (args.out / f"collectives{tag}.json").write_text(
            json.dumps([dataclasses.asdict(pt) for pt in points], indent=1))
        print(f"plots and rows in {args.out}/ (*{tag}.png, *{tag}.json)")
    print("all targets met" if met_all else "some targets missed (MISSED above)")
    return 0
