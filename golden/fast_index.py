"""golden.fast's decoder for a group stream that comes with an index (the ring's framing:
the byte offset of every `every`-th group; never the NIC's wire, which has none and is
decoded by fast.py alone).

Why an index: it lets a chunk be cut at its entries into pieces that decode on separate
cores (the device codec, drivers/collectives/device_codec.py), and it is checked here:
bytes and index that disagree are an error, never values. On one core the stream is
decoded by the same walk as without an index (fast_kernels.unpack_marked: each group
expanded or shuffled into its lanes and decoded in registers as it is walked, zero runs
stepped four groups at a time), which records the offset of every `every`-th group on its way; those offsets
must equal the index. An earlier version walked eight blocks at once from the index's
offsets, decoding two groups per 16-lane vector: it stepped through zero groups one at
a time and ran slower than the single walk with zero steps (docs/benchmarks.md).
The blocks near the data's end, which the walk leaves, go through fast.py's checked walk
and decoder. The walk is the host's kernel's (fast_host: AVX-512 VBMI2's vpexpandb,
AVX2's pshufb or the portable pairs); with kernel=False the checked walk decodes it all.
A little-endian host is assumed.
"""

from __future__ import annotations

import functools
import numbers

import numpy as np

from .decompression_block import decode_table
from .fast_blocks import dec_consts
from .fast_kernels import BY_NAME, unpack_marked
from .wire import GROUP_VALUES

__all__ = ["fast_unpack_groups_indexed_into"]


@functools.lru_cache(maxsize=None)
def _consts(k, codec):
    decode_table(k, codec)      # checks codec and k
    return dec_consts(k, codec)


def _walk(kernel):
    """The marking walk fast_unpack_groups_indexed_into's kernel argument names."""
    if kernel is None:
        return unpack_marked
    if isinstance(kernel, bool):
        return unpack_marked if kernel else None
    if kernel not in BY_NAME:
        raise ValueError(f"kernel must be None, a bool or one of {', '.join(BY_NAME)}; got {kernel!r}")
    return BY_NAME[kernel][2]


def fast_unpack_groups_indexed_into(buf, n, out, index, every, k=None, codec="paper",
                                    kernel=None) -> None:
    """The n values of exactly the groups in ``buf`` (a uint8 array) into out[:n] (uint32,
    as fast.fast_unpack_groups_into takes it: unpack_room(n) words, or exactly n where n
    is a multiple of 8), using ``index`` (the byte offsets of groups 0, every, 2 every,
    ..., as fast_pack_groups_into records them; int32 or int64). Bytes and index that are
    not the groups of n values (damaged bytes, a wrong index, a wrong count, bytes left
    over) are a ValueError; out's contents are then undefined. kernel: None or True, the
    host's marking walk (fast_kernels.unpack_marked); False, the checked walk and
    fast.py's unpack; or a kernel's name ("avx512", "avx2", "portable"), that kernel's
    walk (on any x86-64 CPU all three run: the avx512 one correct, slow without
    AVX-512)."""
    from . import fast

    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"value count must be an integer >= 0, got {n!r}")
    if isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 1:
        raise ValueError(f"every must be a positive group count, got {every!r}")
    n, every = int(n), int(every)
    consts = _consts(k, codec)
    if not isinstance(buf, np.ndarray) or buf.dtype != np.uint8 or buf.ndim != 1:
        raise ValueError("the groups must be a 1-D uint8 array")
    if not isinstance(index, np.ndarray) or index.dtype not in (np.int32, np.int64) or index.ndim != 1:
        raise ValueError("the index must be a 1-D int32 or int64 array")
    groups = -(-n // GROUP_VALUES)
    entries = -(-groups // every)
    data = np.ascontiguousarray(buf)
    size = data.size
    idx = np.ascontiguousarray(index, np.int64)

    def wrong():
        return ValueError(f"{size} bytes and an index of {index.size} entries are not the "
                          f"groups of {n} values (damaged bytes, a wrong index or a wrong count)")

    if idx.size != entries:
        raise ValueError(f"the index has {idx.size} entries, {entries} expected for {n} values")
    if n == 0:
        if size:
            raise wrong()
        return
    exact = n % GROUP_VALUES == 0 and isinstance(out, np.ndarray) and out.size == n
    fast._out_array(out, np.uint32, n if exact else fast.unpack_room(n), "out")
    if idx[0] != 0:
        raise wrong()
    walk = _walk(kernel)
    nb = 0              # blocks decoded and checked against the index by the walk
    if walk is not None:
        marks = np.empty(entries, np.uint64)
        g, _ = walk(data, groups, out, *consts, marks, every)
        if g:
            # blocks before the last one it marked are whole and checked; the checked
            # walk goes on from that one's start (valid data: the walk stops 42 bytes
            # before the end, short of the last group)
            nb = (g - 1) // every
            if not np.array_equal(marks[:nb + 1].view(np.int64), idx[:nb + 1]):
                raise wrong()
    # the rest (or all, without the kernel): a checked walk, then fast.py's decoder
    lo = int(idx[nb])
    if not 0 <= lo <= size:
        raise wrong()
    a = nb * every * GROUP_VALUES
    part = data[lo:]
    starts, end = fast.group_offsets(part, n - a, every)
    if end != part.size or not np.array_equal(starts + lo, idx[nb:]):
        raise wrong()
    fast.fast_unpack_groups_into(part, n - a, out[a:], k, codec)
