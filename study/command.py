"""The study's options and its run: every experiment, then docs/results.md and
docs/results/*.png. `inceptionn study` (`make study`) and `python -m inceptionn.study` both use it."""

import time
from dataclasses import replace
from pathlib import Path

from .harness import FULL, REDUCED
from .results import run as run_all
from .results import write


def add_arguments(ap) -> None:
    """`inceptionn study`'s options."""
    ap.add_argument("--reduced", action="store_true",
                    help="one seed, few steps, small P (what the tests run)")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default 2)")
    ap.add_argument("--out", type=Path, default=Path("docs/results.md"))
    ap.add_argument("--img", type=Path, default=None,
                    help="figures folder (default: results/ next to --out)")


def run(args) -> int:
    scale = REDUCED if args.reduced else FULL
    if args.jobs is not None:
        scale = replace(scale, jobs=args.jobs)
    t0 = time.perf_counter()
    res = run_all(scale, progress=True)
    img = args.img or args.out.parent / "results"
    write(res, scale, args.out, img, seconds=time.perf_counter() - t0)
    print(f"wrote {args.out} and {img}/ ({time.perf_counter() - t0:.0f} s)")
    return 0
