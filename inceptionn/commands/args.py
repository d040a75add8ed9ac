"""What every command shares: the user-error exception (status 2, one line on stderr)
and the argparse types of the wire's settings. Imports the golden model only, so that the
command line (cli.py) and each command import it without a circle."""

import argparse

from .. import golden

__all__ = ["CliError", "error_bound_arg", "dscp_arg", "versions_arg", "wire_version_arg"]


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


def add_offload_arg(p) -> None:
    """--offload auto|off: the software NIC's hosts' TAPs with or without offloads (a
    Bridge's `offload`: offload_setting(args))."""
    p.add_argument("--offload", choices=("auto", "off"), default="auto",
                   help="the hosts' TAPs with checksum, segmentation and receive offloads "
                        "where the kernel and the switch allow (auto: the compiled switch "
                        "without captures) or plain TAPs, one read and one write per MTU "
                        "frame (off)")


def offload_setting(args):
    """Bridge(offload=...) for --offload: None (where possible) or False."""
    return None if args.offload == "auto" else False
