"""Argument checks the commands share: argparse types (so that a bad value's message
names its option: "argument --seed: ..."), sizes bounded by this machine's memory, and
output paths tried for writing before any work starts."""

from __future__ import annotations

import argparse
import errno
import os

__all__ = ["int_in", "float_in", "positive_float", "int_list", "memory_bytes", "size_in_memory", "writable",
           "one_line"]


def int_in(lo: int, hi: int | None = None):
    """argparse type: an integer in lo..hi (hi None: no upper bound)."""
    span = f"in {lo}..{hi}" if hi is not None else f">= {lo}"

    def parse(text):
        try:
            v = int(text, 0) if isinstance(text, str) else int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer {span}, got {text!r}") from None
        if v < lo or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"expected an integer {span}, got {v}")
        return v
    return parse


def float_in(lo: float, hi: float):
    """argparse type: a finite number in lo..hi."""
    def parse(text):
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number in {lo:g}..{hi:g}, "
                                             f"got {text!r}") from None
        if not lo <= v <= hi:            # NaN fails both
            raise argparse.ArgumentTypeError(f"expected a number in {lo:g}..{hi:g}, got {text}")
        return v
    return parse


def positive_float(text):
    """argparse type: a finite number above 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}") from None
    if not 0 < v < float("inf"):          # NaN fails too
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text}")
    return v


def int_list(lo: int, hi: int):
    """argparse type: a comma-separated list of integers in lo..hi, e.g. '2,4'."""
    one = int_in(lo, hi)

    def parse(text):
        parts = [p.strip() for p in str(text).split(",")]
        if not all(parts):
            raise argparse.ArgumentTypeError(f"expected integers in {lo}..{hi} separated by "
                                             f"commas, such as 2,4; got {text!r}")
        try:
            return [one(p) for p in parts]
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentTypeError(f"{e} (in {text!r})") from None
    return parse


def memory_bytes() -> int:
    """The memory this machine has free for a new process: MemAvailable, else all of it."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def size_in_memory(parse_size, copies: float):
    """argparse type: a size that parse_size reads (ValueError on bad text), which with
    the `copies` of it the command holds fits in this machine's available memory."""
    def parse(text):
        try:
            size = parse_size(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        have = memory_bytes()
        if size * copies > have:
            raise argparse.ArgumentTypeError(
                f"{text} ({size} bytes) does not fit in this machine's memory: it needs "
                f"about {copies:g} times that, {have / 2**30:.1f} GiB are available")
        return size
    return parse


def writable(path, option: str) -> None:
    """ValueError naming `option` unless `path` can be opened for writing; a file that
    did not exist is removed again (the command writes it later). A full disk shows
    only when written: the writer reports it (one_line)."""
    existed = os.path.lexists(path)
    if os.path.isdir(path):
        raise ValueError(f"{option} {path}: cannot write there: it is a folder")
    try:
        with open(path, "ab"):
            pass
    except OSError as e:
        raise ValueError(f"{option} {path}: cannot write there: {one_line(e)}") from None
    if not existed:
        try:
            os.unlink(path)
        except OSError:
            pass


def one_line(exc: BaseException) -> str:
    """An exception as one line of text (an OSError as its errno text, the full disk
    said as such)."""
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return "no space left on the device (disk full)"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
