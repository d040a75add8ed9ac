"""The software NIC's segmentation offload: what a NIC's TSO does before its MAC.

With virtio-net headers on a host's TAP (drivers/netns.open_tap(offload=True)) the
host's kernel hands the switch TCP segments of up to 64 KB with a partial checksum, one
read(2) each, instead of MTU frames it segmented and checksummed itself. `next_frame`
cuts such a segment into the MTU frames the host's kernel would have sent (gso_size
bytes of payload each, as its MSS says): the headers copied, the IP total length, ID and
checksum, the TCP sequence number and flags set per frame (FIN and PSH on the last only,
CWR on the first only) and the TCP checksum completed, as Linux's own tcp_gso_segment
does. A frame that is not a GSO segment only has its checksum completed if the kernel
left it partial (VIRTIO_NET_HDR_F_NEEDS_CSUM). From there on every frame takes the path
it took before: the INCEPTIONN TX engine sits after TSO in a NIC and sees MTU frames.

Frames written to a host's TAP carry a header too. Consecutive frames RX passed that
continue one TCP segment are written as one GSO segment (`coalesce`, `seal`: what a
NIC's receive offload hands a stack), its TCP checksum left partial
(VIRTIO_NET_HDR_F_NEEDS_CSUM: RX has checked each frame's); a lone frame goes as it is,
marked VIRTIO_NET_HDR_F_DATA_VALID (a hint the kernel may use; the checksums are whole
either way). Frames RX flagged, and the slow path's, carry no flags: the receiving
kernel checks them as on a plain TAP.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit, types

from ..golden.fast import _ones_sum
from ..golden.fast_host import cache_with_codec

# The switch's compiled files compile golden.fast's functions into their own: numba's
# cache must be stamped with those too, or an edit of golden/fast*.py (or another codec
# kernel) would leave a stale switch compiled. Registered here, before any of the three
# defines a function (fastpath imports tso first, foreign_frames imports fastpath).
cache_with_codec(*(Path(__file__).with_name(n) for n in ("tso.py", "fastpath.py",
                                                          "foreign_frames.py")))

__all__ = ["VNET_HDR", "RAW_ROOM", "F_NEEDS_CSUM", "F_DATA_VALID", "GSO_NONE", "GSO_TCPV4",
           "next_frame", "copy"]

VNET_HDR = 10            # struct virtio_net_hdr (no num_buffers)
RAW_ROOM = 65536 + 256   # the largest GSO segment a TAP hands over, with its headers
F_NEEDS_CSUM, F_DATA_VALID = 1, 2
GSO_NONE, GSO_TCPV4 = 0, 1

# st (the worker's state array) slots for the segment being cut
PENDING, NEXT_OFF, SEG_NO = 5, 6, 7


@njit(cache=True, nogil=True, inline="always")
def _le16(b, off):
    return np.int64(b[off]) | (np.int64(b[off + 1]) << 8)


@njit(cache=True, nogil=True, inline="always")
def _be16(b, off):
    return (np.int64(b[off]) << 8) | np.int64(b[off + 1])


@njit(cache=True, nogil=True, inline="always")
def _set16(b, off, v):
    b[off] = np.uint8((v >> 8) & 0xFF)
    b[off + 1] = np.uint8(v & 0xFF)


_c_memcpy = types.ExternalFunction("memcpy", types.voidptr(types.voidptr, types.voidptr,
                                                          types.uintp))


@njit(cache=True, nogil=True, inline="always")
def copy(dst, d, src, s, n):
    """dst[d:d + n] = src[s:s + n] (uint8 buffers that never overlap), by libc's memcpy:
    numba's slice assignment, and a loop whose indices may be negative, go byte by byte
    (about 1 ns a byte, measured)."""
    if n > 0:
        _c_memcpy(dst[d:].ctypes, src[s:].ctypes, n)


@njit(cache=True, nogil=True)
def _sum(b, start, end, init):
    """golden.fast._ones_sum(b[start:end], init), four bytes a load: the words summed in
    the machine's (little-endian) order and the folded sum byte-swapped (RFC 1071)."""
    m = (end - start) // 4
    w = b[start:start + 4 * m].view(np.uint32)
    t = np.uint64(0)
    for i in range(m):
        t += np.uint64(w[i])
    while t > np.uint64(0xFFFF):
        t = (t & np.uint64(0xFFFF)) + (t >> np.uint64(16))
    t = ((t & np.uint64(0xFF)) << np.uint64(8)) | (t >> np.uint64(8))
    return _ones_sum(b[start + 4 * m:end], t + np.uint64(init))


@njit(cache=True, nogil=True)
def _complete(f, n, start, off):
    """Fold the one's-complement sum of f[start:n] (the field at start + off holds the
    pseudo header's sum, as the kernel left it) into that field."""
    if start + off + 2 > n:
        return False
    s = _sum(f, start, n, 0)
    v = np.int64(~s & 0xFFFF)
    et = _be16(f, 12) if n >= 14 else 0
    udp = (et == 0x0800 and n > 23 and f[23] == 17) or (et == 0x86DD and n > 20 and f[20] == 17)
    if v == 0 and udp:                            # UDP sends a zero sum as 0xFFFF
        v = 0xFFFF
    _set16(f, start + off, v)
    return True


@njit(cache=True, nogil=True)
def next_frame(raw, out, st):
    """The next MTU frame of the segment in raw[:st[PENDING]] (virtio-net header first)
    into `out`; its length, or -1 if the segment is malformed (dropped whole). Advances
    st; st[PENDING] is 0 once the segment's last frame is out."""
    n = st[PENDING]
    vh = VNET_HDR
    flags = np.int64(raw[0])
    gso = np.int64(raw[1]) & 0x7F
    mss = _le16(raw, 4)
    L = n - vh
    if gso == GSO_NONE:
        st[PENDING] = 0
        if L <= 0:
            return -1
        copy(out, 0, raw, vh, L)
        if flags & F_NEEDS_CSUM and not _complete(out, L, _le16(raw, 6), _le16(raw, 8)):
            return -1
        return L
    # TCP over IPv4, untagged: the only GSO type the TAP's offloads let the kernel send
    if gso != GSO_TCPV4 or mss <= 0 or L < 54 or _be16(raw, vh + 12) != 0x0800:
        st[PENDING] = 0
        return -1
    l3 = 14
    ihl = 4 * (np.int64(raw[vh + l3]) & 0xF)
    l4 = l3 + ihl
    if ihl < 20 or L < l4 + 20:
        st[PENDING] = 0
        return -1
    hl = l4 + 4 * (np.int64(raw[vh + l4 + 12]) >> 4)
    payload = L - hl
    if hl > L or hl < l4 + 20:
        st[PENDING] = 0
        return -1
    off = st[NEXT_OFF]
    seg = st[SEG_NO]
    m = min(mss, payload - off)
    copy(out, 0, raw, vh, hl)
    copy(out, hl, raw, vh + hl + off, m)
    last = off + m >= payload
    _set16(out, l3 + 2, ihl + (hl - l4) + m)
    _set16(out, l3 + 4, (_be16(raw, vh + l3 + 4) + seg) & 0xFFFF)
    out[l3 + 10] = 0
    out[l3 + 11] = 0
    _set16(out, l3 + 10, np.int64(~_ones_sum(out[l3:l4], np.uint64(0)) & 0xFFFF))
    seq = (np.int64(out[l4 + 4]) << 24 | np.int64(out[l4 + 5]) << 16
           | np.int64(out[l4 + 6]) << 8 | np.int64(out[l4 + 7]))
    seq = (seq + off) & 0xFFFFFFFF
    for i in range(4):
        out[l4 + 4 + i] = np.uint8((seq >> (24 - 8 * i)) & 0xFF)
    if not last:
        out[l4 + 13] &= np.uint8(0xF6)      # FIN and PSH: the last frame's
    if seg > 0:
        out[l4 + 13] &= np.uint8(0x7F)      # CWR: the first frame's
    # TCP checksum: pseudo header (addresses, protocol, TCP length), header, payload
    tlen = hl - l4 + m
    s = _ones_sum(out[l3 + 12:l3 + 20], np.uint64(6 + tlen))
    out[l4 + 16] = 0
    out[l4 + 17] = 0
    s = _sum(out, l4, hl + m, s)
    _set16(out, l4 + 16, np.int64(~s & 0xFFFF))
    if last:
        st[PENDING] = 0
    else:
        st[NEXT_OFF] = off + m
        st[SEG_NO] = seg + 1
    return hl + m


# ------------------------------------------------------------- receive: coalescing
# ag (a worker's int64 array) describes the frames waiting in agg, the buffer written to
# a host's TAP (virtio-net header, then one frame or a GSO segment of several):
AG_LEN, AG_TO, AG_HL, AG_MSS, AG_SEQ, AG_FRAMES, AG_BYTES, AG_OPEN = range(8)
ACK, PSH = 0x10, 0x08
AGG_ROOM = VNET_HDR + 14 + 65535     # the header and the largest IPv4 packet


@njit(cache=True, nogil=True, inline="always")
def _seq(b, off):
    return (np.int64(b[off]) << 24 | np.int64(b[off + 1]) << 16
            | np.int64(b[off + 2]) << 8 | np.int64(b[off + 3]))


@njit(cache=True, nogil=True)
def _tcp4(f, h):
    """The TCP header's length if f[:h] is an untagged IPv4 frame with a 20-byte header,
    not a fragment, carrying TCP with payload and only ACK or ACK|PSH set; else 0."""
    if h < 55 or _be16(f, 12) != 0x0800 or f[14] != 0x45 or f[23] != 6:
        return 0
    if _be16(f, 20) & 0x3FFF or _be16(f, 16) != h - 14:
        return 0
    hl = 34 + 4 * (np.int64(f[46]) >> 4)
    if hl < 54 or hl >= h or (f[47] != ACK and f[47] != ACK | PSH):
        return 0
    return hl


@njit(cache=True, nogil=True)
def mergeable(f, h):
    """Whether f[:h] may wait in agg: TCP over IPv4 as _tcp4 says, its IP and TCP
    checksums right. A segment goes to the host with its checksum left partial, which the host
    does not check: a frame whose sum is wrong (a host may send one on purpose) is
    written alone, and the receiving kernel drops it as on a plain TAP."""
    if _tcp4(f, h) == 0 or _ones_sum(f[14:34], np.uint64(0)) != 0xFFFF:
        return False
    s = _ones_sum(f[26:34], np.uint64(6 + h - 34))
    return _sum(f, 34, h, s) == 0xFFFF


@njit(cache=True, nogil=True)
def coalesce(agg, ag, f, h, to):
    """Append the frame f[:h] (RX passed it, `mergeable`; for host `to`) to the segment waiting
    in agg if it continues it: the same host, headers (MACs, IP addresses, TOS, TTL,
    ports, ACK, window, options) and the next sequence number, after frames of one
    size (the MSS), with room left. False if not: the caller flushes and calls `start`.
    A frame with PSH or shorter than the MSS closes the segment, as GRO does."""
    if ag[AG_LEN] == 0 or ag[AG_OPEN] == 0 or ag[AG_TO] != to:
        return False
    hl = ag[AG_HL]
    if _tcp4(f, h) != hl:
        return False
    vh = VNET_HDR
    m = h - hl
    if m > ag[AG_MSS] or ag[AG_LEN] + m - 14 > 65535 or _seq(f, 38) != ag[AG_SEQ]:
        return False
    for i in range(hl):          # all but IP length, ID, checksum, sequence number, flags
        if (i < 16 or 20 <= i < 24 or 26 <= i < 38 or 42 <= i < 47 or 48 <= i < 50
                or i >= 52) and f[i] != agg[vh + i]:
            return False
    copy(agg, vh + ag[AG_LEN], f, hl, m)
    ag[AG_LEN] += m
    ag[AG_SEQ] = (ag[AG_SEQ] + m) & 0xFFFFFFFF
    ag[AG_FRAMES] += 1
    ag[AG_BYTES] += h
    if f[47] & PSH or m < ag[AG_MSS]:
        agg[vh + 47] |= np.uint8(PSH) if f[47] & PSH else np.uint8(0)
        ag[AG_OPEN] = 0
    return True


@njit(cache=True, nogil=True)
def start(agg, ag, f, h, to):
    """f[:h] (for host `to`, `mergeable`) becomes the segment waiting in agg."""
    vh = VNET_HDR
    copy(agg, vh, f, 0, h)
    hl = _tcp4(f, h)
    ag[AG_LEN] = h
    ag[AG_TO] = to
    ag[AG_HL] = hl
    ag[AG_MSS] = h - hl
    ag[AG_SEQ] = (_seq(f, 38) + h - hl) & 0xFFFFFFFF if hl else 0
    ag[AG_FRAMES] = 1
    ag[AG_BYTES] = h
    ag[AG_OPEN] = 1 if hl and not f[47] & PSH else 0


@njit(cache=True, nogil=True)
def seal(agg, ag):
    """Header and virtio-net header for the segment in agg; the bytes to write. One
    frame goes as it is, its checksums whole (DATA_VALID); several as one GSO segment
    whose IP length and checksum are the whole's and whose TCP checksum is left partial
    (NEEDS_CSUM), as a NIC's receive offload hands a stack a GRO segment."""
    vh = VNET_HDR
    n = ag[AG_LEN]
    for i in range(vh):
        agg[i] = 0
    if ag[AG_FRAMES] == 1:
        agg[0] = F_DATA_VALID
        return vh + n
    f = agg[vh:]
    hl = ag[AG_HL]
    _set16(f, 16, n - 14)
    f[24] = 0
    f[25] = 0
    _set16(f, 24, np.int64(~_ones_sum(f[14:34], np.uint64(0)) & 0xFFFF))
    # the pseudo header's sum, not complemented: the rest is the receiver's to add
    s = _ones_sum(f[26:34], np.uint64(6 + n - 34))
    _set16(f, 50, np.int64(s))
    agg[0] = F_NEEDS_CSUM
    agg[1] = GSO_TCPV4
    agg[2] = np.uint8(hl & 0xFF)
    agg[3] = np.uint8(hl >> 8)
    mss = ag[AG_MSS]
    agg[4] = np.uint8(mss & 0xFF)
    agg[5] = np.uint8(mss >> 8)
    agg[6] = 34                      # csum_start: the TCP header
    agg[8] = 16                      # csum_offset: its checksum field
    return vh + n
