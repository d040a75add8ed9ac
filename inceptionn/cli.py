"""The `inceptionn` command line: one program, every command a subcommand.

  inceptionn roundtrip | stats | nic tx | nic rx     the golden model on arrays and captures
  inceptionn nic bridge | mark                       the software NIC on Linux networking
  inceptionn demo                                    real gradients through the engines
  inceptionn bench golden | hw | nic | train | collectives | foreign | codec
  inceptionn verilog | vc709 | synth | architecture  the gateware: Verilog, FPGA tree, reports

`inceptionn COMMAND --help` describes each. The commands live in inceptionn/commands/
(one module each, registered in inceptionn/commands/__init__.py); this module only
dispatches. Every failure the user can cause (a bad file, a bad argument) exits with
status 2 and one message on stderr.
"""

import argparse
import sys

from . import golden

__all__ = ["main", "build_parser", "CliError", "error_bound_arg", "dscp_arg"]


class CliError(Exception):
    """A user error: reported on stderr, exit status 2."""


def error_bound_arg(text):
    """argparse type: an error bound 2^-k given as text; returns k."""
    try:
        return golden.parse_error_bound(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def dscp_arg(text):
    """argparse type: a DSCP in 0..63."""
    try:
        return golden.check_dscp(int(text, 0))
    except ValueError:
        raise argparse.ArgumentTypeError(f"DSCP must be an integer in 0..63, got {text!r}") from None


def build_parser(argv=None):
    """The argparse parser with every registered command (the options of the one that
    `argv` names)."""
    from .commands import register_all
    parser = argparse.ArgumentParser(prog="inceptionn", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    register_all(sub, sys.argv[1:] if argv is None else argv)
    return parser


def main(argv=None):
    """Run the command line; returns the exit status (0 ok, 2 user error)."""
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:            # argparse already printed usage or help
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return args.func(args)
    except (CliError, ValueError) as exc:
        print(f"inceptionn: error: {exc}", file=sys.stderr)
        return 2
