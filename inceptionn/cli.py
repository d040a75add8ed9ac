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

from .commands.args import CliError, dscp_arg, error_bound_arg  # re-exported: the API names them

__all__ = ["main", "build_parser", "CliError", "error_bound_arg", "dscp_arg"]


class _Parser(argparse.ArgumentParser):
    """Option errors as one line that names the option (argparse's "argument --seed:
    ..."), without the usage block; --help still prints it. Subcommands' parsers are
    of this class too (add_subparsers uses the parent's)."""

    def error(self, message):
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


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
