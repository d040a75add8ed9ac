"""Goodput of a tagged TCP stream through the software NIC (`make bench-nic`).

The measurement is inceptionn.bench.nic; this module is its command line.
"""

from __future__ import annotations

import argparse
import sys
import time

from .. import golden
from ..bench.golden import parse_size
from ..bench.nic import (
    PEER_PORT,
    format_rows,
    format_targets,
    peer,
    run_bench_nic,
    uptime,
)
from ..drivers.netns import netns_available
from .checks import int_in, size_in_memory


def add_arguments(p) -> None:
    """`inceptionn bench nic`'s options."""
    p.add_argument("--size", type=size_in_memory(parse_size, 4), default="64M", help="stream size (default 64M)")
    p.add_argument("--mtu", type=int, action="append", choices=(1500, 9000),
                   help="MTU, repeatable (default both)")
    p.add_argument("--error-bound", type=golden.parse_error_bound, default=golden.K_DEFAULT,
                   metavar="2^-K")
    p.add_argument("--codec", choices=golden.CODECS, default=golden.CODEC_DEFAULT)
    p.add_argument("--workers", type=int_in(1, 2), default=None,
                   help="the bridge's worker threads (default one per port)")
    # The peer processes (internal).
    p.add_argument("--peer", choices=("send", "recv"), help=argparse.SUPPRESS)
    p.add_argument("--file", help=argparse.SUPPRESS)
    p.add_argument("--count", type=int, help=argparse.SUPPRESS)
    p.add_argument("--addr", help=argparse.SUPPRESS)
    p.add_argument("--mss", type=int, help=argparse.SUPPRESS)
    p.add_argument("--dscp", type=int, default=golden.DSCP_DEFAULT, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, default=PEER_PORT, help=argparse.SUPPRESS)


def run(args) -> int:
    if args.peer:
        return peer(args)
    why = netns_available()
    if why is not None:
        print(f"bench-nic needs network namespaces: {why}", file=sys.stderr)
        return 2
    try:
        size = args.size
        golden.check_k(args.error_bound, args.codec)
    except ValueError as e:
        print(f"bench-nic: {e}", file=sys.stderr)
        return 2
    load0 = uptime()
    t0 = time.perf_counter()
    if args.workers is not None and not 1 <= args.workers <= 2:
        print("bench-nic: --workers must be 1 or 2 (two hosts)", file=sys.stderr)
        return 2
    rows = run_bench_nic(size, tuple(args.mtu or (9000, 1500)), args.error_bound, args.codec,
                         workers=args.workers)
    print(f"tagged TCP stream of {size / 1e6:.0f} MB of HDC gradients, {args.codec} codec, "
          f"error bound 2^-{args.error_bound}, sender and receiver in separate processes "
          f"({time.perf_counter() - t0:.0f} s in all)")
    print(f"load before: {load0}\nload after:  {uptime()}")
    print(format_rows(rows))
    print()
    print("targets, engines on (printed, not asserted):")
    print(format_targets(rows))
    return 0
