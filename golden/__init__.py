"""Bit-exact NumPy model of the INCEPTIONN wire format (docs/wire-format.md), versions 1
(the paper's codec, shim 0xC5), 2 (the bounded codec, shim 0xC6) and 3 (the bounded
codec, shim 0xC7 with a check word over the frame's invariant header fields).

Block names follow the paper (Figs. 9 and 10), and each block's model is in the module
of the same name as its RTL in hw/ (golden/compression_unit.py beside
hw/compression_unit.py, ...), so that the two read side by side; wire.py holds the
wire-format constants.
"""

# This folder is inceptionn.golden (pyproject's package-dir). Imported under another name
# (`import golden` from the checkout's root) its modules would load twice, as other objects.
if __name__ != "inceptionn.golden":
    raise ImportError(f"{__name__}: import it as inceptionn.golden", name=__name__)

from .wire import (BEAT_BYTES, CODEC_DEFAULT, CODEC_MAGIC, CODECS, DSCP_DEFAULT, TOS_DEFAULT, EB_K_MAX, EB_K_MIN, GROUP_VALUES,
                   K_DEFAULT, K_MAX, K_MIN, MAX_FRAME_BYTES, MAX_PAYLOAD, SHIM_BYTES, SHIM_MAGIC,
                   SHIM_MAGIC_V1, SHIM_MAGIC_V2, SHIM_MAGIC_V3, SHIM_BYTES_V3, VERSIONS,
                   CODEC_VERSION, RX_VERSIONS_DEFAULT, shim_bytes)
from .compression_block import (TAG_16BIT, TAG_8BIT, TAG_RAW, TAG_WIDTH, TAG_ZERO, as_bits,
                                band_limits, check_codec, check_k, compression_block, k_range)
from .decompression_block import decode_table, decompression_block
from .shifter_tree import shifter_tree
from .compression_unit import compression_unit, pack_groups, tag_word
from .tag_decoder import group_lengths, tag_decoder
from .decompression_unit import decompression_unit, unpack_groups
from .api import as_float32, decode, encode, parse_error_bound, roundtrip
from .alignment_unit import alignment_unit
from .burst_buffer import BurstBuffer
from .payload import (compress_payload, compress_payload_with_decoded, decoded_payload,
                      decompress_payload, make_shim, min_compressed_len, parse_shim, shim_codec,
                      shim_version)
from .shim_check import check_message, check_word
from .checksum import internet_checksum, ip_header_checksum, l4_checksum, ones_sum
from .packet_matcher import FrameInfo, check_dscp, packet_matcher
from .counters import BYTE_COUNTER_BITS, FRAME_COUNTER_BITS, Counters
from .frames import ip_checksum_ok, l4_checksum_ok, parse_frame
from .compression_engine import tx_frame
from .decompression_engine import (RX_HEADER_WINDOW, check_versions, rx_frame, shim_accepted,
                                   versions_mask)
from .stats import BAND_BITS, BandStats, band_stats
from . import pcap

# The compiled fast path (golden.fast) is loaded on first use: importing numba alone takes
# seconds, and most processes (every testbench's simulator, most commands) need only the
# NumPy model.
_FAST = ("fast_compress_payload", "fast_compress_payload_with_decoded",
         "fast_decompress_payload", "fast_pack_groups", "fast_unpack_groups")


def __getattr__(name):
    import importlib
    if name == "fast" or name in _FAST:
        fast = importlib.import_module(".fast", __name__)
        return fast if name == "fast" else getattr(fast, name)
    if name == "compressors":   # its old place: gradient exchange lives in drivers.collectives
        return importlib.import_module("..drivers.collectives.compressors", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    # wire-format constants
    "BEAT_BYTES", "DSCP_DEFAULT", "TOS_DEFAULT",
    # value codec and groups
    "CODECS", "CODEC_DEFAULT", "CODEC_MAGIC", "check_codec", "k_range", "EB_K_MIN", "EB_K_MAX", "decode_table",
    "K_DEFAULT", "K_MIN", "K_MAX", "TAG_ZERO", "TAG_8BIT", "TAG_16BIT", "TAG_RAW", "TAG_WIDTH",
    "as_bits", "band_limits", "check_k", "compression_block", "decompression_block",
    "GROUP_VALUES", "compression_unit", "group_lengths", "pack_groups", "shifter_tree",
    "tag_decoder", "tag_word", "unpack_groups",
    # float front end
    "as_float32", "decode", "encode", "parse_error_bound", "roundtrip",
    # stream blocks
    "alignment_unit", "BurstBuffer", "decompression_unit",
    # payload
    "MAX_PAYLOAD", "SHIM_BYTES", "SHIM_MAGIC", "SHIM_MAGIC_V1", "SHIM_MAGIC_V2", "shim_codec",
    "min_compressed_len", "compress_payload", "compress_payload_with_decoded",
    "decoded_payload",
    "decompress_payload", "make_shim", "parse_shim",
    "SHIM_MAGIC_V3", "SHIM_BYTES_V3", "VERSIONS", "CODEC_VERSION", "RX_VERSIONS_DEFAULT",
    "shim_bytes", "shim_version", "check_message", "check_word", "check_versions", "versions_mask",
    # frames
    "internet_checksum", "ip_header_checksum", "l4_checksum", "ones_sum",
    "FrameInfo", "check_dscp", "packet_matcher",
    "BYTE_COUNTER_BITS", "FRAME_COUNTER_BITS", "MAX_FRAME_BYTES", "Counters",
    "ip_checksum_ok", "l4_checksum_ok", "parse_frame", "rx_frame", "tx_frame", "RX_HEADER_WINDOW",
    "shim_accepted",
    # statistics
    "BAND_BITS", "BandStats", "band_stats",
    # the compiled fast path (same bytes)
    "pcap",
    "fast", "fast_compress_payload", "fast_compress_payload_with_decoded", "fast_decompress_payload",
    "fast_pack_groups", "fast_unpack_groups",
]
