"""`make study`: run every experiment, write docs/results.md and docs/img/study.png."""

import argparse
import sys
import time
from pathlib import Path

from tqdm import tqdm

from .experiments import EXPERIMENTS, FULL, QUICK
from .report import write


def run(scale, progress=True):
    res = {}
    bar = tqdm(EXPERIMENTS.items(), desc="study", unit="experiment", disable=not progress,
               file=sys.stderr)
    for name, fn in bar:
        bar.set_postfix_str(name)
        res[name] = fn(scale, None)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m study", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="one seed, few steps")
    ap.add_argument("--out", type=Path, default=Path("docs/results.md"))
    args = ap.parse_args(argv)
    scale = QUICK if args.quick else FULL
    t0 = time.perf_counter()
    res = run(scale)
    write(res, scale, time.perf_counter() - t0, args.out)
    print(f"wrote {args.out} ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
