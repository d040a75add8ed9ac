"""`python -m inceptionn.study [--reduced] ...`: the same as `inceptionn study`, without the command
line's other commands."""

import argparse
import sys

from .command import add_arguments, run

if __name__ == "__main__":
    ap = argparse.ArgumentParser(prog="python -m inceptionn.study", description=__doc__.split("\n")[0])
    add_arguments(ap)
    sys.exit(run(ap.parse_args()))
