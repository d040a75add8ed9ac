"""ShifterTree (hw/shifter_tree.py): the stored fields of a group packed in order."""

import numpy as np

from .compression_block import as_bits
from .wire import GROUP_VALUES

__all__ = ["shifter_tree"]


def _pack_items(values, widths):
    """Concatenate items, each ``widths[i]`` bytes of ``values[i]`` little-endian.

    Vectorized: byte offsets by cumulative sum, then one scatter per byte lane.
    """
    values = np.asarray(values, dtype=np.uint32).ravel()
    widths = np.asarray(widths, dtype=np.int64).ravel()
    ends = np.cumsum(widths)
    total = int(ends[-1]) if ends.size else 0
    starts = ends - widths
    out = np.zeros(total, dtype=np.uint8)
    for lane in range(4):
        sel = widths > lane
        out[starts[sel] + lane] = (values[sel] >> np.uint32(8 * lane)) & np.uint32(0xFF)
    return out.tobytes()


def shifter_tree(stored, width):
    """Pack 8 (or fewer) stored fields, ``width[i]`` bytes each, little-endian, in order."""
    stored = as_bits(stored).ravel()
    width = np.asarray(width).ravel()
    if stored.shape != width.shape or stored.size > GROUP_VALUES:
        raise ValueError("shifter_tree takes up to 8 (stored, width) pairs of equal count")
    if width.size and not np.isin(width, (0, 1, 2, 4)).all():
        raise ValueError("widths must be 0, 1, 2 or 4 bytes")
    return _pack_items(stored, width)
