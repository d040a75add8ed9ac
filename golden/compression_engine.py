"""Compression engine (hw/compression_engine.py, spec section 4 TX): tx_frame.

Per frame, plain Python on bytes; the payload work is the vectorized codec.
"""

import numbers

from .arguments import as_flag, as_frame
from .checksum import l4_checksum
from .compression_block import check_codec, k_range
from .counters import Counters
from .frames import be16, fix_ip_checksum, l4_checksum_offset, set_be16
from .packet_matcher import IPPROTO_TCP, IPPROTO_UDP, check_dscp, packet_matcher
from .payload import check_version, compress_payload_with_decoded
from .shim_check import check_word
from .wire import CODEC_DEFAULT, CODEC_VERSION, K_DEFAULT, MAX_FRAME_BYTES
from .wire import DSCP_DEFAULT

__all__ = ["tx_frame", "check_k_port"]


def check_k_port(k):
    """k as int for the engine's 7-bit config port: 0 and 127 are legal values that
    bypass compression (and, for the bounded codec, 17..126 too); anything else outside
    0..127 raises ValueError."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 0 <= k <= 127:
        raise ValueError(f"k must be an integer in 0..127 (the 7-bit config port), got {k!r}")
    return int(k)


def tx_frame(frame, *, k=K_DEFAULT, dscp=DSCP_DEFAULT, enable=True, tuser=False, counters=None,
             codec=CODEC_DEFAULT, impl=None, version=None):
    """Compression engine: the frame the NIC puts on the wire, or None if dropped (oversize).

    ``codec``: the value codec, sampled per frame like k and dscp: "bounded" (k in 1..16;
    the default) or "paper" (wire version 1, shim 0xC5, k in 1..126). A k outside the
    codec's range bypasses the frame (counted). ``version``: the wire version written,
    by default the codec's (paper 1, bounded 3: shim 0xC7 with its check word); 2 (shim
    0xC6, no check word) is for receivers that predate version 3.
    ``impl``: None for this NumPy model, or golden.fast.FAST (the same bytes, compiled).
    """
    k, dscp, codec = check_k_port(k), check_dscp(dscp), check_codec(codec)
    version = check_version(CODEC_VERSION[codec] if version is None else version, codec)
    enable, tuser = as_flag(enable, "enable"), as_flag(tuser, "tuser")
    frame = as_frame(frame)
    c = counters if counters is not None else Counters()
    c.frames_in += 1
    if len(frame) > MAX_FRAME_BYTES:
        # Store-and-forward: a frame that does not fit the frame store is dropped.
        c.dropped += 1
        return None
    c.frames_out += 1
    info = None
    k_min, k_max = k_range(codec)
    if enable and not tuser and k_min <= k <= k_max:
        info = packet_matcher(frame, dscp)
    if info is None:
        c.bypassed += 1
        return frame
    p, length = info.payload_offset, info.payload_len
    payload = frame[p:p + length]
    # C and D (needed below for the L4 checksum) from one pass of the codec.
    if impl is None:
        comp, decoded = compress_payload_with_decoded(payload, k, codec, version)
    else:
        comp, decoded = impl.compress(payload, k, codec, version)
    if len(comp) >= length:
        # Not worth it: keep the payload, clear the DSCP so no receiver decompresses it.
        out = bytearray(frame)
        out[info.l3 + 1] &= 0x03
        fix_ip_checksum(out, info)
        c.fallback += 1
        return bytes(out)
    hdr = bytearray(frame[:p])
    l4 = info.l4
    csum_off = l4_checksum_offset(info.proto)
    if info.proto == IPPROTO_TCP or be16(hdr, l4 + 6) != 0:
        # The checksum of the packet as the receiver restores it (original lengths, D).
        restored = bytes(hdr[l4:]) + decoded
        csum = l4_checksum(hdr[info.l3 + 12:info.l3 + 16], hdr[info.l3 + 16:info.l3 + 20],
                           info.proto, restored, csum_off,
                           sum_fn=None if impl is None else impl.ones_sum)
        if info.proto == IPPROTO_UDP and csum == 0:
            csum = 0xFFFF
        set_be16(hdr, l4 + csum_off, csum)
    if version == 3:
        # The check word: none of the fields it covers is rewritten here.
        word = check_word(hdr, info.l3, l4, info.proto, len(comp), comp[:4])
        comp = comp[:4] + word.to_bytes(4, "big") + comp[8:]
    set_be16(hdr, info.l3 + 2, info.ip_total_len - (length - len(comp)))
    if info.proto == IPPROTO_UDP:
        set_be16(hdr, l4 + 4, 8 + len(comp))
    fix_ip_checksum(hdr, info)
    c.compressed += 1
    if version == 1:
        c.version1 += 1
    elif version == 2:
        c.version2 += 1
    else:
        c.version3 += 1
    c.payload_bytes_in += length
    c.payload_bytes_out += len(comp)
    return bytes(hdr) + comp
