"""Golden-model throughput against a plain copy and lossless compressors (`make bench`).

The measurement is inceptionn.bench.golden; this module is its command line.
"""

from __future__ import annotations

import sys
from pathlib import Path

from inceptionn import golden
from inceptionn.golden import fast_kernels

from ..bench.golden import (
    format_rounds,
    format_targets,
    format_table,
    format_versions,
    format_vs_copy,
    parse_size,
    run_bench,
)
from .args import CliError
from .checks import int_in, size_in_memory


def add_arguments(ap) -> None:
    """`inceptionn bench golden`'s options."""
    ap.add_argument("--size", type=size_in_memory(parse_size, 4), default="64M", help="synthetic buffer size, e.g. 64M, 256K (default %(default)s)")
    ap.add_argument("--k", type=int, default=golden.K_DEFAULT,
                    help="error bound 2^-k, 1..16 (both codecs run; default %(default)s)")
    ap.add_argument("--repeat", type=int_in(1), default=3, help="runs per method, best kept (default %(default)s)")
    ap.add_argument("--rounds", type=int_in(0), default=5,
                    help="rounds of copy, pack, unpack in turn for the one-core comparison, "
                         "medians printed (0: none; default %(default)s)")
    ap.add_argument("--seed", type=int_in(0, 2**63 - 1), default=0)
    ap.add_argument("--no-real", action="store_true", help="skip the demo's real gradients")
    ap.add_argument("--no-mlp", action="store_true",
                    help="skip the rounds on the 12.2M-parameter MLP's DDP bucket (48.8 MB)")
    ap.add_argument("--real-steps", type=int_in(3), default=None,
                    help="training steps for the real gradients, 3 or more (early, mid and "
                         "late are captured; default: the demo's)")
    ap.add_argument("--cache", type=Path, default=None, help="gradient cache directory (default: the demo's)")


def run(args) -> int:
    if args.repeat < 1:
        raise CliError("--repeat must be >= 1")
    try:
        size = args.size
        golden.check_k(args.k, "bounded")
    except ValueError as e:
        raise CliError(str(e))

    def progress(msg):
        print(f"  ... {msg}", file=sys.stderr, flush=True)

    results = run_bench(size, k=args.k, seed=args.seed, real=not args.no_real, real_steps=args.real_steps,
                        cache_dir=args.cache, repeat=args.repeat, progress=progress,
                        rounds=args.rounds, mlp=not args.no_mlp)
    print("ratio = uncompressed bytes / compressed bytes; GB/s = uncompressed bytes per wall second "
          "(in to compress, out of decompress); x copy = wall time / numpy copy wall time on the "
          "same buffer; best of `runs`")
    print(fast_kernels.describe())
    print(format_table(results))
    print(format_versions(results))
    print(format_vs_copy(results))
    for r in getattr(results, "rounds", []):
        print(format_rounds(r))
    if getattr(results, "rounds", []):
        print(format_targets(results.rounds, fast_kernels.KERNEL))
    return 0
