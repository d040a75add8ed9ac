"""CompressionUnit (hw/compression_unit.py, spec section 2): a group of 8 values as its
tag word and packed fields, and the vectorized packing of a whole value stream."""

import numpy as np

from .compression_block import GROUP_CHUNK, as_bits, check_codec, check_k, compression_block, encode_into
from .shifter_tree import shifter_tree
from .tag_decoder import GROUP_VALUES, TAG_SHIFTS

__all__ = ["tag_word", "compression_unit", "pack_groups", "pack_values"]


def tag_word(tag):
    """16-bit tag word of up to 8 tags (tag i in bits [2i+1:2i]); missing tags are 00."""
    tag = np.asarray(tag, dtype=np.uint32).ravel()
    if tag.size > GROUP_VALUES:
        raise ValueError("a group holds at most 8 tags")
    return int((tag << TAG_SHIFTS[:tag.size]).sum())


def compression_unit(bits, k, codec="paper"):
    """Encode one group of 1..8 float32 bit patterns: tag word (LE) then the packed fields
    (codec "paper" or "bounded", as compression_block)."""
    bits = as_bits(bits).ravel()
    if not 1 <= bits.size <= GROUP_VALUES:
        raise ValueError(f"a group holds 1..8 values, got {bits.size}")
    tag, stored, width, _ = compression_block(bits, k, codec)
    return tag_word(tag).to_bytes(2, "little") + shifter_tree(stored, width)


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


def pack_values(bits, k, decoded=None, codec="paper"):
    """pack_groups on a flat contiguous uint32 array (n >= 1, k and codec checked); also
    fills ``decoded`` (uint32[n]) with the restored bit patterns when given."""
    n = bits.size
    g = -(-n // GROUP_VALUES)
    per = GROUP_CHUNK * GROUP_VALUES
    rows = min(g, GROUP_CHUNK)
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
        encode_into(bits[lo:hi], k, tc[:m], sc[:m], None,
                    None if decoded is None else decoded[lo:hi], kc[:m], codec)
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


def pack_groups(bits, k, codec="paper"):
    """Encode n float32 bit patterns as consecutive groups (spec section 2) with the value
    codec ``codec`` ("paper", the default of the block-level model; or "bounded")."""
    bits = as_bits(bits).ravel()
    k = check_k(k, check_codec(codec))
    if bits.size == 0:
        return b""
    return pack_values(np.ascontiguousarray(bits), k, codec=codec)
