"""DecompressionUnit (hw/decompression_unit.py; Fig. 10, spec sections 2-4 RX): groups
of a byte stream back to values, and at the byte-stream level the 4n + r payload bytes."""

import math

import numpy as np

from .compression_block import CHUNK, GROUP_CHUNK
from .decompression_block import decode_into, decode_table
from .tag_decoder import GROUP_VALUES, LEN_LUT, OFFS_LUT, TAGS_LUT

__all__ = ["unpack_groups", "decompression_unit"]

_WALK_GROUPS = 128   # up to this many groups, follow the chain in plain Python


_PAD = 296            # zero bytes after the data: room for every chain step read below


def _group_starts(ext, n_data, g):
    """Start offsets (int64) of the first g groups in ``ext``: the n_data bytes of the
    stream followed by _PAD zero bytes, standing for zeros without end.

    Each start depends on every tag word before it. Once a start lies past the data,
    every group reads as a zero tag word (2 bytes), so the rest follow by arithmetic.
    Inside the data, a short chain is walked in plain Python. A long one: "next group
    start" for every byte position, composed with itself d times (pointer doubling) to
    jump S = 2^d groups at once; the chain of every S-th start is walked in Python, and
    the S - 1 starts after each are then filled in by S - 1 vectorized steps over all
    of them at once. d balances the Python steps (g / S) against the passes over the
    bytes (d) and the fill (S).
    """
    if g <= _WALK_GROUPS:
        # "next group start" of every position inside the data, then a list walk.
        w = ext[:n_data].astype(np.intp)
        w |= ext[1:n_data + 1].astype(np.intp) << 8
        nxt = (LEN_LUT[w] + np.arange(n_data)).tolist()
        starts, pos = [], 0
        append = starts.append
        for _ in range(g):
            if pos >= n_data:
                break
            append(pos)
            pos = nxt[pos]
        done = len(starts)
        starts.extend(range(pos, pos + 2 * (g - done), 2))
        return np.array(starts, dtype=np.int64)
    size = ext.size
    # A chain step from inside the data lands at most 33 bytes past it and then moves
    # 2 bytes a step: S <= 32 steps stay below n_data + 98, far from the clamp at the
    # end of ext, which only touches positions the chain never reads.
    words = np.ndarray((size - 1,), dtype="<u2", buffer=ext, strides=(1,))
    jump = np.empty(size - 1, np.int64)
    ix = np.empty(min(size - 1, CHUNK), np.intp)
    ramp = np.arange(ix.size, dtype=np.int64)
    for lo in range(0, size - 1, CHUNK):
        hi = min(lo + CHUNK, size - 1)
        jc, ic = jump[lo:hi], ix[:hi - lo]
        ic[...] = words[lo:hi]
        LEN_LUT.take(ic, out=jc, mode="clip")
        jc += ramp[:hi - lo]
        jc += lo
    np.minimum(jump, size - 2, out=jump)
    # Two buffers in turn: no fresh (page-faulting) array per doubling step.
    far, spare = jump, np.empty_like(jump)
    log2_stride = max(1, min(5, round(math.log2(g / 5) / 2)))
    for step in range(log2_stride):
        far.take(far, out=spare, mode="clip")
        far, spare = spare, (far if step else np.empty_like(jump))
    stride = 1 << log2_stride
    coarse = -(-g // stride)
    heads, pos = [], 0
    while len(heads) < coarse and pos < n_data:
        heads.append(pos)
        pos = int(far[pos])
    starts = np.empty((stride, len(heads)), np.int64)
    starts[0] = heads
    for j in range(1, stride):
        jump.take(starts[j - 1], out=starts[j], mode="clip")
    starts = starts.T.reshape(-1)[:g]
    if starts.size < g:
        # pos: the first head past the data; from there on, 2 bytes a group.
        starts = np.concatenate([starts, pos + 2 * np.arange(g - starts.size, dtype=np.int64)])
    return starts


def unpack_groups(buf, n, k=None, codec="paper"):
    """Decode n values from groups at the start of ``buf`` with the value codec ``codec``
    ("paper", the default of the block-level model; "bounded" needs k).

    Returns ``(bits uint32[n], consumed, ok)``: ``consumed`` is the byte length of the
    n values' groups; ``ok`` is False when the groups run past the end of ``buf``.
    Bytes past the end read as zeros (so missing values decode to +0.0). The length
    of a group always follows its whole tag word, so non-zero tags of a short last
    group's missing values take their bytes, and those values are dropped.
    """
    if n < 0:
        raise ValueError(f"value count must be >= 0, got {n}")
    decode_table(k, codec)  # checks codec and k
    data = np.frombuffer(buf if isinstance(buf, bytes) else bytes(buf), dtype=np.uint8)
    g = -(-n // GROUP_VALUES)
    if g == 0:
        return np.zeros(0, np.uint32), 0, True
    ext = np.concatenate([data, np.zeros(_PAD, np.uint8)])
    starts = _group_starts(ext, data.size, g)
    # Groups that start past the data read as zero tag words: +0.0 values, 2 bytes.
    inside = int(np.searchsorted(starts, data.size))
    bits = np.zeros(g * GROUP_VALUES, np.uint32)
    if inside == g:
        last = int(starts[-1])
        consumed = last + int(LEN_LUT[int(ext[last]) | (int(ext[last + 1]) << 8)])
    else:
        consumed = int(starts[-1]) + 2
    starts = starts[:inside]
    words = ext[starts].astype(np.intp) | (ext[starts + 1].astype(np.intp) << 8)
    # Every stored field is read as the 4 bytes at its offset (an unaligned little-endian
    # uint32 view of ext); the decoder ignores the bytes past the field's width.
    fields = np.ndarray((ext.size - 3,), dtype="<u4", buffer=ext, strides=(1,))
    rows = max(1, min(inside, GROUP_CHUNK))
    tags = np.empty((rows, GROUP_VALUES), np.uint8)
    offs = np.empty((rows, GROUP_VALUES), np.intp)
    rel = np.empty((rows, GROUP_VALUES), np.uint8)
    stored = np.empty((rows, GROUP_VALUES), np.uint32)
    for lo in range(0, inside, GROUP_CHUNK):
        hi = min(lo + GROUP_CHUNK, inside)
        gr = hi - lo
        tc, oc, sc, wc = tags[:gr], offs[:gr], stored[:gr], words[lo:hi]
        TAGS_LUT.take(wc, axis=0, out=tc, mode="clip")
        OFFS_LUT.take(wc, axis=0, out=rel[:gr], mode="clip")
        np.add(starts[lo:hi, None], rel[:gr], out=oc)
        sc[...] = fields[oc]  # fancy indexing: np.take would copy the whole view first
        decode_into(tc.reshape(-1), sc.reshape(-1), bits[lo * GROUP_VALUES:hi * GROUP_VALUES], k, codec)
    return bits[:n], consumed, consumed <= data.size


def decompression_unit(stream, n, r, k=None, codec="paper"):
    """Restore 4n + r payload bytes from a compressed stream (groups, then r raw tail bytes)
    with the value codec ``codec`` (as unpack_groups).

    Returns ``(data, error)``. ``data`` is always exactly 4n + r bytes: the stream is
    read as if zero bytes followed its end, so values or tail bytes past the end come
    out as zeros. ``error`` is set when the groups or the tail run past the end of the
    stream, or when bytes are left over after the tail.
    """
    if n < 0 or not 0 <= r <= 3:
        raise ValueError(f"need n >= 0 values and 0..3 tail bytes, got n={n}, r={r}")
    stream = bytes(stream)
    bits, consumed, _ = unpack_groups(stream, n, k, codec)
    tail = stream[consumed:consumed + r]
    tail += bytes(r - len(tail))
    error = consumed + r != len(stream)
    return bits.astype("<u4").tobytes() + tail, error
