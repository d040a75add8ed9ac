"""Frame transforms of the two engines (spec section 4): tx_frame and rx_frame.

Per frame, plain Python on bytes; the payload work is the vectorized codec.
"""

import numbers

from .checksum import ip_header_checksum, l4_checksum
from .codec import K_DEFAULT, K_MAX, K_MIN
from .counters import MAX_FRAME_BYTES, Counters
from .packet_matcher import DSCP_DEFAULT, IPPROTO_TCP, IPPROTO_UDP, check_dscp, packet_matcher
from .payload import SHIM_MAGIC, _compress, decompress_payload

__all__ = ["tx_frame", "rx_frame", "ip_checksum_ok", "l4_checksum_ok", "parse_frame",
           "RX_HEADER_WINDOW"]

# The RX engine is cut-through: it decides from the first 5 beats of 32 bytes it holds
# (the shim ends at byte 141 at most) and the shim, before the frame has ended. Only a
# frame of at most this many bytes is held in full, so only for such a frame can it check
# that the IP total length fits in the frame; a longer frame whose IP total length claims
# more bytes than arrive is decompressed from the bytes that do arrive and flagged bad
# (see rx_frame and the wire-format notes).
RX_HEADER_WINDOW = 160


def _set16(buf, off, value):
    buf[off:off + 2] = (value & 0xFFFF).to_bytes(2, "big")


def _get16(buf, off):
    return (buf[off] << 8) | buf[off + 1]


def _csum_offset(proto):
    return 16 if proto == IPPROTO_TCP else 6


def _fix_ip_checksum(buf, info):
    """The IP header checksum is always recomputed in full (never updated incrementally)."""
    _set16(buf, info.l3 + 10, ip_header_checksum(buf[info.l3:info.l3 + 4 * info.ihl]))


def _check_k_port(k):
    # The RTL port is 7 bits: 0 and 127 are legal values that bypass compression.
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 0 <= k <= 127:
        raise ValueError(f"k must be an integer in 0..127 (the 7-bit config port), got {k!r}")
    return int(k)


def tx_frame(frame, *, k=K_DEFAULT, dscp=DSCP_DEFAULT, enable=True, tuser=False, counters=None,
             codec=None):
    """Compression engine: the frame the NIC puts on the wire, or None if dropped (oversize).

    ``codec``: None for this NumPy model, or golden.fast.FAST (the same bytes, compiled).
    """
    k, dscp = _check_k_port(k), check_dscp(dscp)
    c = counters if counters is not None else Counters()
    frame = bytes(frame)
    c.frames_in += 1
    if len(frame) > MAX_FRAME_BYTES:
        # Store-and-forward: a frame that does not fit the frame store is dropped.
        c.dropped += 1
        return None
    c.frames_out += 1
    info = None
    if enable and not tuser and K_MIN <= k <= K_MAX:
        info = packet_matcher(frame, dscp)
    if info is None:
        c.bypassed += 1
        return frame
    p, length = info.payload_offset, info.payload_len
    payload = frame[p:p + length]
    # C and D (needed below for the L4 checksum) from one pass of the codec.
    comp, decoded = _compress(payload, k, True) if codec is None else codec.compress(payload, k)
    if len(comp) >= length:
        # Not worth it: keep the payload, clear the DSCP so no receiver decompresses it.
        out = bytearray(frame)
        out[info.l3 + 1] &= 0x03
        _fix_ip_checksum(out, info)
        c.fallback += 1
        return bytes(out)
    hdr = bytearray(frame[:p])
    l4 = info.l4
    csum_off = _csum_offset(info.proto)
    if info.proto == IPPROTO_TCP or _get16(hdr, l4 + 6) != 0:
        # The checksum of the packet as the receiver restores it (original lengths, D).
        restored = bytes(hdr[l4:]) + decoded
        csum = l4_checksum(hdr[info.l3 + 12:info.l3 + 16], hdr[info.l3 + 16:info.l3 + 20],
                           info.proto, restored, csum_off,
                           sum_fn=None if codec is None else codec.ones_sum)
        if info.proto == IPPROTO_UDP and csum == 0:
            csum = 0xFFFF
        _set16(hdr, l4 + csum_off, csum)
    _set16(hdr, info.l3 + 2, info.ip_total_len - (length - len(comp)))
    if info.proto == IPPROTO_UDP:
        _set16(hdr, l4 + 4, 8 + len(comp))
    _fix_ip_checksum(hdr, info)
    c.compressed += 1
    c.payload_bytes_in += length
    c.payload_bytes_out += len(comp)
    return bytes(hdr) + comp


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
        length = _get16(comp, 0)
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
    _set16(hdr, info.l3 + 2, info.ip_total_len + (length - received))
    if info.proto == IPPROTO_UDP:
        _set16(hdr, info.l4 + 4, 8 + length)
    _fix_ip_checksum(hdr, info)
    c.decompressed += 1
    c.malformed += int(bad)
    c.payload_bytes_in += received      # as the IP header claims, like the RTL
    c.payload_bytes_out += length
    return bytes(hdr) + data, bool(bad or tuser)


def parse_frame(frame):
    """Parse an Ethernet II / IPv4 / TCP or UDP frame whatever its DSCP.

    Raises ValueError when the frame is too short or not such a frame; returns the
    FrameInfo otherwise (used to check checksums of any TCP/UDP frame).
    """
    f = bytes(frame)
    if len(f) < 14:
        raise ValueError(f"frame too short to parse: {len(f)} bytes, an Ethernet header needs 14")
    l3 = 18 if _get16(f, 12) == 0x8100 else 14
    if len(f) < l3 + 20:
        raise ValueError(f"frame too short to parse: {len(f)} bytes, no room for an IPv4 header")
    info = None
    if len(f) > l3 + 1:
        # Match against the frame's own DSCP so that any DSCP parses.
        info = packet_matcher(f, f[l3 + 1] >> 2)
    if info is None:
        raise ValueError("not a parsable IPv4 TCP/UDP frame with at least 4 payload bytes")
    return info


def ip_checksum_ok(frame):
    """True if the IPv4 header checksum of a parsable frame is right."""
    info = parse_frame(frame)
    f = bytes(frame)
    return _get16(f, info.l3 + 10) == ip_header_checksum(f[info.l3:info.l3 + 4 * info.ihl])


def l4_checksum_ok(frame):
    """True if the TCP/UDP checksum of a parsable frame is right (a UDP checksum of 0 is off)."""
    info = parse_frame(frame)
    f = bytes(frame)
    off = _csum_offset(info.proto)
    got = _get16(f, info.l4 + off)
    if info.proto == IPPROTO_UDP and got == 0:
        return True
    seg = f[info.l4:info.l3 + info.ip_total_len]
    want = l4_checksum(f[info.l3 + 12:info.l3 + 16], f[info.l3 + 16:info.l3 + 20],
                       info.proto, seg, off)
    if info.proto == IPPROTO_UDP and want == 0:
        want = 0xFFFF
    return got == want
