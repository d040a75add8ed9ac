"""Groups of 8 values (spec section 2): ShifterTree, CompressionUnit, TagDecoder and
the vectorized packing and unpacking of a whole value stream.

A group is a 16-bit little-endian tag word (tag of value i in bits [2i+1:2i]) followed
by the stored fields of values 0..7, each little-endian, 0/1/2/4 bytes. Groups follow
each other with no padding; a short last group has 00 tags for its missing values.
"""

import math

import numpy as np

from .codec import _CHUNK, TAG_WIDTH, _decode_into, _encode_into, as_bits, check_k, compression_block

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


def _tag_words(tags):
    """16-bit tag words of groups of 8 uint8 tags (flat, length a multiple of 8), as uint32.

    The 8 tags of a group are one little-endian uint64 (tag i in byte i); three
    shift-or-mask steps gather the 2-bit fields into bits [2i+1:2i].
    """
    x = tags.view("<u8").astype(np.uint64)
    x |= x >> np.uint64(6)
    x &= np.uint64(0x000F000F000F000F)
    x |= x >> np.uint64(12)
    x &= np.uint64(0x000000FF000000FF)
    x |= x >> np.uint64(24)
    x &= np.uint64(0xFFFF)
    return x.astype(np.uint32)


# The packer lays a group out in 9 little-endian 32-bit slots: slot 0 holds the tag
# word in its upper two bytes, slots 1..8 the stored fields. A byte mask in the same
# layout (1 for a byte that goes on the wire) turns the packing into one boolean
# selection over the chunk.
_SLOTS = GROUP_VALUES + 1
_TAGWORD_KEEP = 0x01010000
_GROUP_CHUNK = 4096  # groups per pass


def _pack(bits, k, decoded=None):
    """pack_groups on a flat contiguous uint32 array (n >= 1, k checked); also fills
    ``decoded`` (uint32[n]) with the restored bit patterns when given."""
    n = bits.size
    g = -(-n // GROUP_VALUES)
    per = _GROUP_CHUNK * GROUP_VALUES
    rows = min(g, _GROUP_CHUNK)
    vals = rows * GROUP_VALUES
    tag = np.empty(vals, np.uint8)
    stored = np.empty(vals, np.uint32)
    kept = np.empty(vals, np.uint32)
    slots = np.empty((rows, _SLOTS), "<u4")
    keep = np.empty((rows, _SLOTS), "<u4")
    keep[:, 0] = _TAGWORD_KEEP
    pieces = []
    for lo in range(0, n, per):
        hi = min(lo + per, n)
        m = hi - lo
        gr = -(-m // GROUP_VALUES)
        mv = gr * GROUP_VALUES
        tc, sc, kc = tag[:mv], stored[:mv], kept[:mv]
        _encode_into(bits[lo:hi], k, tc[:m], sc[:m], None,
                     None if decoded is None else decoded[lo:hi], kc[:m])
        # A short last group: missing values have tag 00 and take no bytes.
        tc[m:] = 0
        sc[m:] = 0
        kc[m:] = 0
        sl, kp = slots[:gr], keep[:gr]
        sl[:, 0] = _tag_words(tc) << np.uint32(16)
        sl[:, 1:] = sc.reshape(gr, GROUP_VALUES)
        kp[:, 1:] = kc.reshape(gr, GROUP_VALUES)
        # np.compress: several times faster than boolean indexing on such masks.
        pieces.append(np.compress(kp.view(np.bool_).reshape(-1), sl.view(np.uint8).reshape(-1)).tobytes())
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def pack_groups(bits, k):
    """Encode n float32 bit patterns as consecutive groups (spec section 2)."""
    bits = as_bits(bits).ravel()
    if bits.size == 0:
        return b""
    return _pack(np.ascontiguousarray(bits), check_k(k))


# Offset of each field from its group's start (tag word included), per tag word.
_OFFS_LUT = (2 + np.cumsum(TAG_WIDTH[_TAGS_LUT], axis=1) - TAG_WIDTH[_TAGS_LUT]).astype(np.uint8)
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
        nxt = (_LEN_LUT[w] + np.arange(n_data)).tolist()
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
    ix = np.empty(min(size - 1, _CHUNK), np.intp)
    ramp = np.arange(ix.size, dtype=np.int64)
    for lo in range(0, size - 1, _CHUNK):
        hi = min(lo + _CHUNK, size - 1)
        jc, ic = jump[lo:hi], ix[:hi - lo]
        ic[...] = words[lo:hi]
        _LEN_LUT.take(ic, out=jc, mode="clip")
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
        consumed = last + int(_LEN_LUT[int(ext[last]) | (int(ext[last + 1]) << 8)])
    else:
        consumed = int(starts[-1]) + 2
    starts = starts[:inside]
    words = ext[starts].astype(np.intp) | (ext[starts + 1].astype(np.intp) << 8)
    # Every stored field is read as the 4 bytes at its offset (an unaligned little-endian
    # uint32 view of ext); the decoder ignores the bytes past the field's width.
    fields = np.ndarray((ext.size - 3,), dtype="<u4", buffer=ext, strides=(1,))
    rows = max(1, min(inside, _GROUP_CHUNK))
    tags = np.empty((rows, GROUP_VALUES), np.uint8)
    offs = np.empty((rows, GROUP_VALUES), np.intp)
    rel = np.empty((rows, GROUP_VALUES), np.uint8)
    stored = np.empty((rows, GROUP_VALUES), np.uint32)
    for lo in range(0, inside, _GROUP_CHUNK):
        hi = min(lo + _GROUP_CHUNK, inside)
        gr = hi - lo
        tc, oc, sc, wc = tags[:gr], offs[:gr], stored[:gr], words[lo:hi]
        _TAGS_LUT.take(wc, axis=0, out=tc, mode="clip")
        _OFFS_LUT.take(wc, axis=0, out=rel[:gr], mode="clip")
        np.add(starts[lo:hi, None], rel[:gr], out=oc)
        sc[...] = fields[oc]  # fancy indexing: np.take would copy the whole view first
        _decode_into(tc.reshape(-1), sc.reshape(-1), bits[lo * GROUP_VALUES:hi * GROUP_VALUES])
    return bits[:n], consumed, consumed <= data.size
