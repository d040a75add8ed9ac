"""Groups of 8 values (spec section 2): ShifterTree, CompressionUnit, TagDecoder and
the vectorized packing and unpacking of a whole value stream.

A group is a 16-bit little-endian tag word (tag of value i in bits [2i+1:2i]) followed
by the stored fields of values 0..7, each little-endian, 0/1/2/4 bytes. Groups follow
each other with no padding; a short last group has 00 tags for its missing values.
"""

import numpy as np

from .codec import TAG_WIDTH, as_bits, compression_block, decompression_block

__all__ = ["GROUP_VALUES", "shifter_tree", "compression_unit", "tag_decoder", "tag_word",
           "pack_groups", "unpack_groups", "group_lengths"]

GROUP_VALUES = 8
_SHIFTS = np.arange(GROUP_VALUES, dtype=np.uint32) * np.uint32(2)
# Group length (bytes, tag word included) for every possible tag word.
_TAGS_LUT = ((np.arange(1 << 16, dtype=np.uint32)[:, None] >> _SHIFTS) & np.uint32(3)).astype(np.uint8)
_LEN_LUT = (2 + TAG_WIDTH[_TAGS_LUT].sum(axis=1, dtype=np.int64)).astype(np.int64)


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


def tag_word(tag):
    """16-bit tag word of up to 8 tags (tag i in bits [2i+1:2i]); missing tags are 00."""
    tag = np.asarray(tag, dtype=np.uint32).ravel()
    if tag.size > GROUP_VALUES:
        raise ValueError("a group holds at most 8 tags")
    return int((tag << _SHIFTS[:tag.size]).sum())


def compression_unit(bits, k):
    """Encode one group of 1..8 float32 bit patterns: tag word (LE) then the packed fields."""
    bits = as_bits(bits).ravel()
    if not 1 <= bits.size <= GROUP_VALUES:
        raise ValueError(f"a group holds 1..8 values, got {bits.size}")
    tag, stored, width, _ = compression_block(bits, k)
    return tag_word(tag).to_bytes(2, "little") + shifter_tree(stored, width)


def tag_decoder(tagword):
    """Tag word -> (widths[8] in bytes, offsets[8] from the group start incl. the tag word, length)."""
    tagword = int(tagword)
    if not 0 <= tagword <= 0xFFFF:
        raise ValueError(f"a tag word is 16 bits, got {tagword:#x}")
    widths = [int(w) for w in TAG_WIDTH[_TAGS_LUT[tagword]]]
    offsets, pos = [], 2
    for w in widths:
        offsets.append(pos)
        pos += w
    return widths, offsets, pos


def group_lengths(tagwords):
    """Byte length (2..34) of the groups with the given tag words."""
    return _LEN_LUT[np.asarray(tagwords, dtype=np.int64)]


def pack_groups(bits, k):
    """Encode n float32 bit patterns as consecutive groups (spec section 2)."""
    bits = as_bits(bits).ravel()
    n = bits.size
    if n == 0:
        return b""
    tag, stored, width, _ = compression_block(bits, k)
    g = -(-n // GROUP_VALUES)
    pad = g * GROUP_VALUES - n
    tag = np.concatenate([tag, np.zeros(pad, np.uint8)]).reshape(g, GROUP_VALUES)
    stored = np.concatenate([stored, np.zeros(pad, np.uint32)]).reshape(g, GROUP_VALUES)
    width = np.concatenate([width, np.zeros(pad, np.uint8)]).reshape(g, GROUP_VALUES)
    words = (tag.astype(np.uint32) << _SHIFTS).sum(axis=1, dtype=np.uint32)
    # Items per group: the tag word (2 bytes), then the 8 fields.
    values = np.concatenate([words[:, None], stored], axis=1)
    widths = np.concatenate([np.full((g, 1), 2, np.int64), width.astype(np.int64)], axis=1)
    return _pack_items(values, widths)


def _group_starts(ext, g):
    """Start offsets of the first g groups in the (zero-extended) byte array ``ext``.

    Each start depends on every tag word before it. Instead of walking the chain one
    group at a time, compute "next group start" for every byte position and follow it
    by pointer doubling: log2(g) vectorized steps.
    """
    size = ext.size
    # Positions near the end would read past ext; their tag words are only needed
    # for the chain's own positions, which the caller keeps inside ext.
    words = ext[:-1].astype(np.int64) | (ext[1:].astype(np.int64) << 8)
    jump = np.minimum(np.arange(size - 1) + _LEN_LUT[words], size - 2)
    starts = np.zeros(1, dtype=np.int64)
    while starts.size < g:
        starts = np.concatenate([starts, jump[starts]])
        jump = jump[jump]
    return starts[:g]


def unpack_groups(buf, n):
    """Decode n values from groups at the start of ``buf``.

    Returns ``(bits uint32[n], consumed, ok)``: ``consumed`` is the byte length of the
    n values' groups; ``ok`` is False when the groups run past the end of ``buf``.
    Bytes past the end read as zeros (so missing values decode to +0.0). The length
    of a group always follows its whole tag word, so non-zero tags of a short last
    group's missing values take their bytes, and those values are dropped.
    """
    if n < 0:
        raise ValueError(f"value count must be >= 0, got {n}")
    data = np.frombuffer(bytes(buf), dtype=np.uint8)
    g = -(-n // GROUP_VALUES)
    if g == 0:
        return np.zeros(0, np.uint32), 0, True
    # Past the end every group reads as a zero tag word (2 bytes); one group that
    # starts inside may reach 34 bytes out. Keep every chain position inside ext.
    ext = np.concatenate([data, np.zeros(2 * g + 40, np.uint8)])
    starts = _group_starts(ext, g)
    words = ext[starts].astype(np.uint32) | (ext[starts + 1].astype(np.uint32) << np.uint32(8))
    tags = _TAGS_LUT[words]                                   # (g, 8)
    widths = TAG_WIDTH[tags].astype(np.int64)
    offs = starts[:, None] + 2 + np.cumsum(widths, axis=1) - widths
    stored = np.zeros(tags.shape, dtype=np.uint32)
    for lane in range(4):
        sel = widths > lane
        stored[sel] |= ext[offs[sel] + lane].astype(np.uint32) << np.uint32(8 * lane)
    bits = decompression_block(tags, stored).ravel()[:n]
    consumed = int(starts[-1] + _LEN_LUT[words[-1]])
    return bits, consumed, consumed <= data.size
