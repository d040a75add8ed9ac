"""Checks at the entries of the model's public functions: a bad argument is a ValueError
that names it, before any work or allocation (an int taken as a frame would be
``bytes(n)``: n zero bytes; a string taken as a flag would be true)."""

import numbers

import numpy as np

from .wire import GROUP_VALUES

__all__ = ["as_frame", "as_flag", "as_count", "groups_capacity", "check_fits"]


def as_frame(frame, what="frame") -> bytes:
    """A bytes-like object (bytes, bytearray, memoryview, a uint8 array) as bytes."""
    if isinstance(frame, bytes):
        return frame
    try:
        view = memoryview(frame)
    except TypeError:
        raise ValueError(f"{what} must be bytes-like (bytes, bytearray, memoryview), "
                         f"got {type(frame).__name__}") from None
    return view.tobytes()


def as_flag(value, what) -> bool:
    """A boolean: True/False (NumPy's too) or the integers 0 and 1 (a signal's value)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    raise ValueError(f"{what} must be a boolean (True or False), got {value!r}")


def as_count(n, what="n") -> int:
    """A value count: a non-negative integer (not a bool, not a float)."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        raise ValueError(f"{what} must be a non-negative integer, got {n!r}")
    if n < 0:
        raise ValueError(f"{what} must be >= 0, got {n}")
    return int(n)


def groups_capacity(nbytes: int) -> int:
    """The most values that groups of ``nbytes`` bytes can hold: every group of
    GROUP_VALUES values takes at least its 2-byte tag word (all values zero)."""
    return GROUP_VALUES * (nbytes // 2)


def check_fits(n: int, nbytes: int) -> None:
    """ValueError when ``nbytes`` of groups cannot hold ``n`` values (checked before the
    n values are allocated)."""
    if n > groups_capacity(nbytes):
        raise ValueError(f"{n} values cannot fit in {nbytes} bytes of groups (at most "
                         f"{groups_capacity(nbytes)}: each group of {GROUP_VALUES} takes "
                         f"at least 2 bytes)")
