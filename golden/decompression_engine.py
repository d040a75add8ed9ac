"""Decompression engine (hw/decompression_engine.py, spec section 4 RX): rx_frame.

Per frame, plain Python on bytes; the payload work is the vectorized codec.
"""

from .counters import Counters
from .frames import be16, fix_ip_checksum, set_be16
from .packet_matcher import IPPROTO_UDP, check_dscp, packet_matcher
from .payload import decompress_payload
from .wire import DEFAULT_DSCP as DSCP_DEFAULT
from .wire import MAX_FRAME_BYTES, SHIM_MAGIC

__all__ = ["rx_frame", "RX_HEADER_WINDOW"]

# The RX engine is cut-through: it decides from the first 5 beats of 32 bytes it holds
# (the shim ends at byte 141 at most) and the shim, before the frame has ended. Only a
# frame of at most this many bytes is held in full, so only for such a frame can it check
# that the IP total length fits in the frame; a longer frame whose IP total length claims
# more bytes than arrive is decompressed from the bytes that do arrive and flagged bad
# (see rx_frame and the wire-format notes).
RX_HEADER_WINDOW = 160


def rx_frame(frame, *, dscp=DSCP_DEFAULT, enable=True, tuser=False, counters=None, codec=None):
    """Decompression engine: ``(frame to the host, bad)``; bad = malformed or input tuser.
    ``codec`` as for tx_frame."""
    dscp = check_dscp(dscp)
    c = counters if counters is not None else Counters()
    frame = bytes(frame)
    c.frames_in += 1
    c.frames_out += 1
    info = packet_matcher(frame, dscp, window=RX_HEADER_WINDOW) if enable else None
    truncated = False
    if info is not None:
        # received = the L4 payload length the IP header claims; for a frame longer
        # than the window it may exceed what arrived (comp then ends at the frame end).
        p, received = info.payload_offset, info.payload_len
        comp = frame[p:p + received]
        truncated = len(comp) < received
        length = be16(comp, 0)
        # A compressed payload is always shorter than what it restores.
        if comp[2] != SHIM_MAGIC or length <= received or p + length > MAX_FRAME_BYTES:
            info = None
    if info is None:
        c.bypassed += 1
        return frame, bool(tuser)
    data, bad = decompress_payload(comp) if codec is None else codec.decompress(comp)
    # A frame cut short (lying IP total length, caught only at its end) is always bad,
    # even if the bytes that did arrive happen to decode in full.
    bad = bad or truncated
    hdr = bytearray(frame[:p])
    set_be16(hdr, info.l3 + 2, info.ip_total_len + (length - received))
    if info.proto == IPPROTO_UDP:
        set_be16(hdr, info.l4 + 4, 8 + length)
    fix_ip_checksum(hdr, info)
    c.decompressed += 1
    c.malformed += int(bad)
    c.payload_bytes_in += received      # as the IP header claims, like the RTL
    c.payload_bytes_out += length
    return bytes(hdr) + data, bool(bad or tuser)
