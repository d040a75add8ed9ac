"""Decompression engine (hw/decompression_engine.py, spec section 4 RX): rx_frame.

Per frame, plain Python on bytes; the payload work is the vectorized codec.
"""

from .arguments import as_flag, as_frame
from .counters import Counters
from .frames import be16, fix_ip_checksum, set_be16
from .packet_matcher import IPPROTO_UDP, check_dscp, packet_matcher
from .payload import decompress_payload, min_compressed_len
from .shim_check import check_word
from .wire import DSCP_DEFAULT, RX_VERSIONS_DEFAULT, SHIM_BYTES_V3, VERSION_MAGIC
from .wire import EB_K_MAX, EB_K_MIN, MAX_FRAME_BYTES

__all__ = ["rx_frame", "RX_HEADER_WINDOW", "VERSIONS", "shim_accepted", "check_versions",
           "versions_mask", "RX_VERSIONS_DEFAULT"]

# The RX engine is cut-through: it decides from the first 5 beats of 32 bytes it holds
# (the shim ends at byte 141 at most) and the shim, before the frame has ended. Only a
# frame of at most this many bytes is held in full, so only for such a frame can it check
# that the IP total length fits in the frame; a longer frame whose IP total length claims
# more bytes than arrive is decompressed from the bytes that do arrive and flagged bad
# (see rx_frame and the wire-format notes).
RX_HEADER_WINDOW = 160

# Wire format versions and their shim magic; the RX engine knows all three and accepts
# those its per-frame versions mask names (by default version 3 only).
VERSIONS = dict(VERSION_MAGIC)


def check_versions(versions):
    """The accepted versions as a sorted tuple (each 1, 2 or 3; empty: none, every frame
    is forwarded), else ValueError."""
    try:
        vs = tuple(sorted(set(versions)))
    except TypeError:
        raise ValueError(f"versions must name wire versions among {sorted(VERSIONS)}, "
                         f"got {versions!r}") from None
    if any(isinstance(v, bool) or v not in VERSIONS for v in vs):
        raise ValueError(f"versions must name wire versions among {sorted(VERSIONS)}, got {versions!r}")
    return vs


def versions_mask(versions):
    """The engines' versions mask of ``versions``: bit v - 1 set for each accepted version."""
    return sum(1 << (v - 1) for v in check_versions(versions))


def _accept(shim, received, payload_offset, versions, check):
    """(version or None, True if only the version-3 check word refused it)."""
    length, magic, k = be16(shim, 0), shim[2], shim[3]
    version = next((v for v in versions if VERSIONS[v] == magic), None)
    if version is None or length <= received or payload_offset + length > MAX_FRAME_BYTES:
        return None, False
    if version >= 2 and not (EB_K_MIN <= k <= EB_K_MAX
                             and min_compressed_len(length, version) <= received):
        return None, False
    if version == 3 and (len(shim) < SHIM_BYTES_V3 or check is None
                         or int.from_bytes(shim[4:8], "big") != check):
        return None, True
    return version, False


def shim_accepted(shim, received, payload_offset, versions=RX_VERSIONS_DEFAULT, check=None):
    """The wire version (1, 2 or 3) RX decompresses a payload with, or None (forwarded).

    ``shim``: the first payload bytes (8 for version 3); ``received``: the L4 payload
    length the IP header claims; ``payload_offset``: P; ``versions``: those accepted;
    ``check``: the check word RX computed from the frame (shim_check.check_word), needed
    for version 3. All versions: an accepted version's magic, L > received (a compressed
    payload is always shorter than what it restores), P + L <= MAX_FRAME_BYTES. Versions
    2 and 3 also: k in 1..16, and received >= the fewest bytes that can restore L
    (payload.min_compressed_len). Version 3 also: shim bytes 4..7 equal ``check``.
    """
    return _accept(shim, received, payload_offset, check_versions(versions), check)[0]


def rx_frame(frame, *, dscp=DSCP_DEFAULT, enable=True, tuser=False, counters=None, impl=None,
             versions=RX_VERSIONS_DEFAULT):
    """Decompression engine: ``(frame to the host, bad)``; bad = malformed or input tuser.

    The codec is the one the shim names (version 1: the paper's, versions 2 and 3: the
    bounded one with the shim's k), so RX needs no codec select. ``versions``: the wire
    versions this receiver accepts, sampled per frame like ``dscp`` (default version 3
    only; empty: none); a frame of another version, or a version-3 frame whose check word
    does not match its header, is forwarded unchanged. ``impl`` as for tx_frame.
    """
    dscp = check_dscp(dscp)
    versions = check_versions(versions)
    enable, tuser = as_flag(enable, "enable"), as_flag(tuser, "tuser")
    frame = as_frame(frame)
    c = counters if counters is not None else Counters()
    c.frames_in += 1
    c.frames_out += 1
    info = packet_matcher(frame, dscp, window=RX_HEADER_WINDOW) if enable else None
    truncated = False
    version = None
    if info is not None:
        # received = the L4 payload length the IP header claims; for a frame longer
        # than the window it may exceed what arrived (comp then ends at the frame end).
        p, received = info.payload_offset, info.payload_len
        comp = frame[p:p + received]
        truncated = len(comp) < received
        length = be16(comp, 0)
        check = None
        if 3 in versions and comp[2] == VERSIONS[3]:
            check = check_word(frame, info.l3, info.l4, info.proto, received, comp[:4])
        version, refused = _accept(comp, received, p, versions, check)
        c.check_failed += int(refused)
    if version is None:
        c.bypassed += 1
        return frame, bool(tuser)
    data, bad = decompress_payload(comp) if impl is None else impl.decompress(comp)
    # A frame cut short (lying IP total length, caught only at its end) is always bad,
    # even if the bytes that did arrive happen to decode in full.
    bad = bad or truncated
    hdr = bytearray(frame[:p])
    set_be16(hdr, info.l3 + 2, info.ip_total_len + (length - received))
    if info.proto == IPPROTO_UDP:
        set_be16(hdr, info.l4 + 4, 8 + length)
    fix_ip_checksum(hdr, info)
    c.decompressed += 1
    if version == 1:
        c.version1 += 1
    elif version == 2:
        c.version2 += 1
    else:
        c.version3 += 1
    c.malformed += int(bad)
    c.payload_bytes_in += received      # as the IP header claims, like the RTL
    c.payload_bytes_out += length
    return bytes(hdr) + data, bool(bad or tuser)
