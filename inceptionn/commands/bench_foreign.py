"""Foreign DSCP-10 traffic: how often does RX decompress a frame that no TX engine made?

The measurement is inceptionn.bench.foreign; this module is its command line.
"""

from __future__ import annotations

import time

from ..bench.foreign import expected_rates, golden_agrees, measure, wilson_interval
from .args import CliError
from .checks import int_in


def add_arguments(ap) -> None:
    """`inceptionn bench foreign`'s options."""
    ap.add_argument("--frames", type=int_in(1), default=1_000_000,
                    help="random frames (the docs' run: 10^8)")
    ap.add_argument("--seed", type=int_in(0, 2**63 - 1), default=0)
    ap.add_argument("--threads", type=int_in(1, 1024), default=1,
                    help="threads to split the frames over")
    ap.add_argument("--golden-check", type=int_in(0), default=2000, metavar="N",
                    help="judge the first N frames with golden.rx_frame too (0: off)")


def run(args) -> int:
    if args.frames < 1:
        raise CliError("--frames must be at least 1")
    if not 1 <= args.threads <= 64:
        raise CliError("--threads must be in 1..64")
    if args.golden_check < 0 or args.seed < 0:
        raise CliError("--golden-check and --seed must be >= 0")
    checked = golden_agrees(min(args.golden_check, args.frames), args.seed)
    t0 = time.monotonic()
    res = measure(args.frames, args.seed, threads=args.threads)
    secs = time.monotonic() - t0
    print(f"{args.frames} random TCP/UDP frames with DSCP 10 through the compiled RX "
          f"(seed {args.seed}, {secs:.0f} s, {args.frames / secs / 1e6:.2f} M frames/s; "
          f"the first {checked} agree with golden.rx_frame)")
    exp = expected_rates()
    print(f"{'receiver':>24} | {'judged':>10} | {'decompressed':>12} | {'rate':>9} | "
          f"{'95% interval':>21} | {'expected':>9} | malformed | check refused")
    for name, (hits, bad, refused, n) in res.items():
        lo, hi = wilson_interval(hits, n)
        print(f"{name:>24} | {n:10d} | {hits:12d} | {hits / n:9.2e} | [{lo:8.2e}, {hi:8.2e}] | "
              f"{exp[name]:9.2e} | {bad:9d} | {refused}")
    return 0
