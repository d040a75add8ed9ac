"""TagDecoder (hw/tag_decoder.py, spec section 2): a group's 16-bit tag word -> field
widths, offsets and the group's length, plus the per-tag-word tables that the group
packer and unpacker share.

A group is a 16-bit little-endian tag word (tag of value i in bits [2i+1:2i]) followed
by the stored fields of values 0..7, each little-endian, 0/1/2/4 bytes. Groups follow
each other with no padding; a short last group has 00 tags for its missing values.
"""

import numpy as np

from .compression_block import TAG_WIDTH
from .wire import GROUP_VALUES

__all__ = ["GROUP_VALUES", "tag_decoder", "group_lengths", "TAG_SHIFTS", "TAGS_LUT", "LEN_LUT",
           "OFFS_LUT"]

# Bit position of value i's tag in the tag word.
TAG_SHIFTS = np.arange(GROUP_VALUES, dtype=np.uint32) * np.uint32(2)
# Per tag word: the 8 tags, the group length (bytes, tag word included).
TAGS_LUT = ((np.arange(1 << 16, dtype=np.uint32)[:, None] >> TAG_SHIFTS) & np.uint32(3)).astype(np.uint8)
LEN_LUT = (2 + TAG_WIDTH[TAGS_LUT].sum(axis=1, dtype=np.int64)).astype(np.int64)
# Offset of each field from its group's start (tag word included), per tag word.
OFFS_LUT = (2 + np.cumsum(TAG_WIDTH[TAGS_LUT], axis=1) - TAG_WIDTH[TAGS_LUT]).astype(np.uint8)


def tag_decoder(tagword):
    """Tag word -> (widths[8] in bytes, offsets[8] from the group start incl. the tag word, length)."""
    tagword = int(tagword)
    if not 0 <= tagword <= 0xFFFF:
        raise ValueError(f"a tag word is 16 bits, got {tagword:#x}")
    widths = [int(w) for w in TAG_WIDTH[TAGS_LUT[tagword]]]
    offsets, pos = [], 2
    for w in widths:
        offsets.append(pos)
        pos += w
    return widths, offsets, pos


def group_lengths(tagwords):
    """Byte length (2..34) of the groups with the given tag words."""
    return LEN_LUT[np.asarray(tagwords, dtype=np.int64)]
