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


class _Parser(argparse.ArgumentParser):
    """Option errors as one line that names the option (argparse's "argument --seed:
    ..."), without the usage block; --help still prints it. Subcommands' parsers are
    of this class too (add_subparsers uses the parent's)."""

    def error(self, message):
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def versions_arg(text):
    """argparse type: wire versions RX accepts, comma-separated (``3``, ``1,2,3``; ``none``:
    none, every frame forwarded unchanged)."""
    try:
        if text.strip().lower() == "none":
            return ()
        return golden.check_versions(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"versions must be wire versions among 1, 2, 3, comma-separated "
                                         f"(or none), got {text!r}") from None


def wire_version_arg(text):
    """argparse type: the wire version TX writes (1, 2 or 3)."""
    if text not in ("1", "2", "3"):
        raise argparse.ArgumentTypeError(f"wire version must be 1, 2 or 3, got {text!r}")
    return int(text)


def build_parser(argv=None):
    """The argparse parser with every registered command (the options of the one that
    `argv` names)."""
    from .commands import register_all
    parser = _Parser(prog="inceptionn", description=__doc__.split("\n")[0])
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
        print(f"inceptionn: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except OSError as exc:      # a file the command writes: a full disk, a folder gone
        from .commands.checks import one_line
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"inceptionn: error: {one_line(exc)}{where}", file=sys.stderr)
        return 2
    except MemoryError:
        print("inceptionn: error: not enough memory for this input", file=sys.stderr)
        return 2
