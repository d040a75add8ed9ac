"""The software NIC's per-frame path, compiled: parse, match, header rewrite, checksums,
the codec and the TAP reads and writes in one call per batch of frames (numba, nogil).

golden.tx_frame / rx_frame stay the readable reference; these kernels give the same
bytes, the same `bad` flag and the same counters for every frame (tests/
test_bridge_fastpath.py checks it frame for frame on generated and mangled frames; the
bridge can re-check a sample of live frames, `Bridge(check_every=N)`). The codec's inner
loops are golden.fast's own (_encode, _unpack, _ones_sum, check_word_at and their
tables), so every wire version (1: the paper's codec, 2: the bounded one, 3: the bounded
one with the checked shim) comes with them. RX accepts the versions its mask names
(bit v - 1 for version v, golden.versions_mask).

`pump` is what a bridge worker calls: it reads frames from one host's TAP until the TAP
is empty or a frame needs Python (a broadcast, an unknown or learned MAC: the slow
path), runs TX, the misaligned-segment tracking, RX for the destination host and writes
the result to that host's TAP. read(2) and write(2) are called from the compiled code,
so a worker holds the GIL only between batches; one worker per ingress port runs on its
own core.

Counters live in int64 arrays, one row per port, one array per worker (no two threads
add to the same cell); the bridge sums them. Their columns are COLUMNS.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit, types

from ..golden.counters import Counters
from ..golden.decompression_block import decode_table
from ..golden.fast import CRC32_TABLE, _encode, _lut, _ones_sum, _unpack, check_word_at
from . import tso
from .tso import _be16, _set16
from ..golden.wire import (EB_K_MAX, EB_K_MIN, GROUP_VALUES, K_MAX, K_MIN, MAX_FRAME_BYTES,
                           SHIM_MAGIC_V1, SHIM_MAGIC_V2, SHIM_MAGIC_V3)

__all__ = ["COLUMNS", "ENGINE_COLUMNS", "FlowTable", "Buffers", "tables", "tx_into", "rx_into",
           "observe", "pump", "counters_dict", "RX_WINDOW", "FRAME_ROOM"]

RX_WINDOW = 160            # golden.decompression_engine.RX_HEADER_WINDOW
FRAME_ROOM = 65536         # the largest read from a TAP

ENGINE_COLUMNS = tuple(Counters().as_dict())       # golden's counters, in their order
PORT_COLUMNS = ("from_host_frames", "from_host_bytes", "to_wire_frames", "to_wire_bytes",
                "to_host_frames", "to_host_bytes", "host_queue_drops", "host_errors", "forged",
                "flagged", "tracked", "misaligned", "untracked", "to_self", "mac_table_full",
                "host_reads", "segmented", "host_writes")
COLUMNS = PORT_COLUMNS + tuple(f"tx_{c}" for c in ENGINE_COLUMNS) + \
    tuple(f"rx_{c}" for c in ENGINE_COLUMNS)
_C = {c: i for i, c in enumerate(COLUMNS)}
_E = {c: i for i, c in enumerate(ENGINE_COLUMNS)}
# The kernels below use these column numbers as constants; a change to golden's Counters
# that moves them fails here, at import, not in a wrong count.
assert ENGINE_COLUMNS[:14] == ("frames_in", "frames_out", "compressed", "decompressed", "bypassed",
                               "fallback", "malformed", "dropped", "payload_bytes_in",
                               "payload_bytes_out", "version1", "version2", "version3",
                               "check_failed"), ENGINE_COLUMNS
NP = len(PORT_COLUMNS)
TX0, RX0 = NP, NP + len(ENGINE_COLUMNS)
(FROM_HOST_FRAMES, FROM_HOST_BYTES, TO_WIRE_FRAMES, TO_WIRE_BYTES, TO_HOST_FRAMES, TO_HOST_BYTES,
 HOST_QUEUE_DROPS, HOST_ERRORS, FORGED, FLAGGED, TRACKED, MISALIGNED, UNTRACKED, TO_SELF,
 MAC_TABLE_FULL, HOST_READS, SEGMENTED, HOST_WRITES) = range(NP)
(E_IN, E_OUT, E_COMP, E_DECOMP, E_BYP, E_FALLBACK, E_MALFORMED, E_DROPPED, E_PIN, E_POUT, E_V1,
 E_V2, E_V3, E_CHECK_FAILED) = range(14)
_CRC = CRC32_TABLE

_c_read = types.ExternalFunction("read", types.intp(types.intc, types.voidptr, types.uintp))
_c_write = types.ExternalFunction("write", types.intp(types.intc, types.voidptr, types.uintp))
_errno_loc = types.ExternalFunction("__errno_location", types.CPointer(types.intc)())
_EAGAIN = 11


@functools.lru_cache(maxsize=None)
def tables():
    """Decode tables of every codec and k: row 0 the paper's (version 1), row k the
    bounded codec's at k (version 2, 1..16)."""
    rows = [decode_table(None, "paper")] + [decode_table(k, "bounded") for k in range(1, EB_K_MAX + 1)]
    return np.ascontiguousarray(np.stack(rows))


def encode_lut(k, codec):
    """golden.fast's per-k table for TX, or an unused one when k is outside the codec's
    range (TX then bypasses every frame, as golden.tx_frame does)."""
    lo, hi = (K_MIN, K_MAX) if codec == "paper" else (EB_K_MIN, EB_K_MAX)
    return _lut(k if lo <= k <= hi else 10, codec)


# ---------------------------------------------------------------- frame helpers

@njit(cache=True, nogil=True)
def _match(f, n, dscp, window):
    """golden.packet_matcher: (l3, ihl, l4, proto, payload_offset, payload_len, total),
    l3 = -1 if not eligible. window < 0: none (TX)."""
    if n < 14:
        return -1, 0, 0, 0, 0, 0, 0
    et = _be16(f, 12)
    l3 = 14
    if et == 0x8100:
        if n < 18:
            return -1, 0, 0, 0, 0, 0, 0
        et = _be16(f, 16)
        l3 = 18
    if et != 0x0800 or n < l3 + 20:
        return -1, 0, 0, 0, 0, 0, 0
    ver = np.int64(f[l3]) >> 4
    ihl = np.int64(f[l3]) & 0xF
    if ver != 4 or ihl < 5 or (np.int64(f[l3 + 1]) >> 2) != dscp:
        return -1, 0, 0, 0, 0, 0, 0
    total = _be16(f, l3 + 2)
    if l3 + total > n and (window < 0 or n <= window):
        return -1, 0, 0, 0, 0, 0, 0
    if _be16(f, l3 + 6) & 0x3FFF:
        return -1, 0, 0, 0, 0, 0, 0
    proto = np.int64(f[l3 + 9])
    l4 = l3 + 4 * ihl
    l4_len = total - 4 * ihl
    if proto == 6:
        if l4_len < 20:
            return -1, 0, 0, 0, 0, 0, 0
        doff = np.int64(f[l4 + 12]) >> 4
        if doff < 5 or 4 * doff > l4_len:
            return -1, 0, 0, 0, 0, 0, 0
        payload = l4 + 4 * doff
    elif proto == 17:
        if l4_len < 8 or _be16(f, l4 + 4) != l4_len:
            return -1, 0, 0, 0, 0, 0, 0
        payload = l4 + 8
    else:
        return -1, 0, 0, 0, 0, 0, 0
    length = l3 + total - payload
    if length < 4:
        return -1, 0, 0, 0, 0, 0, 0
    return l3, ihl, l4, proto, payload, length, total


@njit(cache=True, nogil=True)
def _fix_ip_checksum(b, l3, ihl):
    b[l3 + 10] = 0
    b[l3 + 11] = 0
    s = _ones_sum(b[l3:l3 + 4 * ihl], np.uint64(0))
    _set16(b, l3 + 10, np.int64(~s & 0xFFFF))


@njit(cache=True, nogil=True)
def _sum_words(words, nv, start):
    """_ones_sum(words[:nv] as little-endian bytes, start), by 16-bit halves of each word:
    a one's-complement sum taken in the other byte order is the byte-swapped sum (RFC
    1071), so no byte is touched alone."""
    t = np.uint64(0)
    for i in range(nv):
        v = np.uint64(words[i])
        t += (v & np.uint64(0xFFFF)) + (v >> np.uint64(16))
    while t > np.uint64(0xFFFF):
        t = (t & np.uint64(0xFFFF)) + (t >> np.uint64(16))
    t = ((t & np.uint64(0xFF)) << np.uint64(8)) | (t >> np.uint64(8))
    t += np.uint64(start)
    while t > np.uint64(0xFFFF):
        t = (t & np.uint64(0xFFFF)) + (t >> np.uint64(16))
    return t


# ---------------------------------------------------------------- TX and RX

@njit(cache=True, nogil=True)
def tx_into(f, n, out, k, version, lut, dscp, enable, cnt, row, dec):
    """golden.tx_frame of f[:n] into out; returns its length, -1 if dropped (oversize).
    version: 1 (paper's codec), 2 (bounded) or 3 (bounded, checked shim); lut: encode_lut(k, codec); k_ok: k in the
    codec's range is folded into enable by the caller. Counters go to cnt[row, TX0 + ...];
    dec: uint32 scratch of at least MAX_FRAME_BYTES / 4 + 8 words."""
    c = TX0
    cnt[row, c + E_IN] += 1
    if n > MAX_FRAME_BYTES:
        cnt[row, c + E_DROPPED] += 1
        return -1
    cnt[row, c + E_OUT] += 1
    l3, ihl, l4, proto, p, length, total = -1, 0, 0, 0, 0, 0, 0
    if enable:
        l3, ihl, l4, proto, p, length, total = _match(f, n, dscp, -1)
    if l3 < 0:
        cnt[row, c + E_BYP] += 1
        tso.copy(out, 0, f, 0, n)
        return n
    nv = length // 4
    r = length - 4 * nv
    sh = 8 if version == 3 else 4                  # the shim's length
    g = 0
    if nv > 0:
        # The payload's words in place (x86-64 and AArch64 load unaligned words).
        g = np.int64(_encode(f[p:p + 4 * nv].view(np.uint32), lut, out[p + sh:], dec, True))
    comp = sh + g + r
    if comp >= length:
        # Not worth it: the frame as it came, DSCP cleared (golden: fall-back).
        tso.copy(out, 0, f, 0, n)
        out[l3 + 1] &= np.uint8(0x03)
        _fix_ip_checksum(out, l3, ihl)
        cnt[row, c + E_FALLBACK] += 1
        return n
    tso.copy(out, 0, f, 0, p)
    for i in range(r):
        out[p + sh + g + i] = f[p + 4 * nv + i]
    _set16(out, p, length)
    out[p + 2] = np.uint8(SHIM_MAGIC_V1 if version == 1 else SHIM_MAGIC_V2 if version == 2 else SHIM_MAGIC_V3)
    out[p + 3] = np.uint8(k)
    if version == 3:
        word = check_word_at(out, l3, l4, proto, comp, p, _CRC)
        for i in range(4):
            out[p + 4 + i] = np.uint8((word >> np.uint32(24 - 8 * i)) & np.uint32(0xFF))
    coff = l4 + (16 if proto == 6 else 6)
    if proto == 6 or _be16(f, l4 + 6) != 0:
        # L4 checksum of the packet as the receiver restores it: pseudo header, the L4
        # header (checksum zeroed), D (decoded values, then the tail bytes).
        out[coff] = 0
        out[coff + 1] = 0
        seg = (p - l4) + length
        s = _ones_sum(f[l3 + 12:l3 + 20], np.uint64(proto + seg))
        s = _ones_sum(out[l4:p], s)
        if nv > 0:
            s = _sum_words(dec, nv, s)
        s = _ones_sum(f[p + 4 * nv:p + length], s)
        csum = np.int64(~s & 0xFFFF)
        if proto == 17 and csum == 0:
            csum = 0xFFFF
        _set16(out, coff, csum)
    _set16(out, l3 + 2, total - (length - comp))
    if proto == 17:
        _set16(out, l4 + 4, 8 + comp)
    _fix_ip_checksum(out, l3, ihl)
    cnt[row, c + E_COMP] += 1
    cnt[row, c + (E_V1 if version == 1 else E_V2 if version == 2 else E_V3)] += 1
    cnt[row, c + E_PIN] += length
    cnt[row, c + E_POUT] += comp
    return p + comp


@njit(cache=True, nogil=True)
def rx_into(f, n, out, dscp, enable, cnt, row, tabs, vmask):
    """golden.rx_frame of f[:n] into out (room for MAX_FRAME_BYTES + 64 bytes): (length,
    bad). tabs: tables(); vmask: the accepted versions (bit v - 1 for version v)."""
    c = RX0
    cnt[row, c + E_IN] += 1
    cnt[row, c + E_OUT] += 1
    l3, ihl, l4, proto, p, received, total = -1, 0, 0, 0, 0, 0, 0
    version = 0
    avail, length, kk = 0, 0, 0
    if enable:
        l3, ihl, l4, proto, p, received, total = _match(f, n, dscp, RX_WINDOW)
    if l3 >= 0:
        avail = min(received, n - p)
        length = _be16(f, p)
        magic = f[p + 2]
        kk = np.int64(f[p + 3])
        if magic == SHIM_MAGIC_V1:
            version = 1
        elif magic == SHIM_MAGIC_V2:
            version = 2
        elif magic == SHIM_MAGIC_V3:
            version = 3
        if version and ((vmask >> (version - 1)) & 1 == 0 or length <= received
                        or p + length > MAX_FRAME_BYTES):
            version = 0
        if version >= 2:
            nn = length // 4
            sh = 8 if version == 3 else 4
            if not (EB_K_MIN <= kk <= EB_K_MAX and sh + 2 * ((nn + 7) // 8) + (length - 4 * nn) <= received):
                version = 0
        if version == 3:
            word = check_word_at(f, l3, l4, proto, received, p, _CRC)
            got = ((np.uint32(f[p + 4]) << np.uint32(24)) | (np.uint32(f[p + 5]) << np.uint32(16))
                   | (np.uint32(f[p + 6]) << np.uint32(8)) | np.uint32(f[p + 7]))
            if got != word:
                version = 0
                cnt[row, c + E_CHECK_FAILED] += 1
    if version == 0:
        cnt[row, c + E_BYP] += 1
        tso.copy(out, 0, f, 0, n)
        return n, False
    nv = length // 4
    r = length - 4 * nv
    stream = f[p + (8 if version == 3 else 4):p + avail]
    table = tabs[0] if version == 1 else tabs[kk]
    # Decoded straight into the output frame (room for whole groups and a tail word).
    dst = out[p:p + 4 * (8 * ((nv + 7) // 8) + 1)].view(np.uint32)
    consumed = np.int64(_unpack(stream, nv, r, dst, table))
    bad = consumed + r != stream.size or avail < received
    tso.copy(out, 0, f, 0, p)
    _set16(out, l3 + 2, total + (length - received))
    if proto == 17:
        _set16(out, l4 + 4, 8 + length)
    _fix_ip_checksum(out, l3, ihl)
    cnt[row, c + E_DECOMP] += 1
    cnt[row, c + (E_V1 if version == 1 else E_V2 if version == 2 else E_V3)] += 1
    cnt[row, c + E_MALFORMED] += np.int64(bad)
    cnt[row, c + E_PIN] += received
    cnt[row, c + E_POUT] += length
    return p + length, bad


# ---------------------------------------------------------------- stream offsets

class FlowTable:
    """drivers.tcp_align.StreamOffsets in arrays: initial sequence numbers by flow
    (addresses, ports), open addressing; a full probe run overwrites its first slot
    (bounded state, as StreamOffsets.MAX_FLOWS)."""

    SLOTS = 1 << 17

    def __init__(self):
        self.keys = np.zeros((self.SLOTS, 2), np.uint64)
        self.isn = np.zeros(self.SLOTS, np.uint32)
        self.state = np.zeros(self.SLOTS, np.uint8)      # 0 empty, 1 used, 2 deleted


_PROBES = 32


@njit(cache=True, nogil=True, inline="always")
def _slot(a, b, slots):
    h = (a * np.uint64(0x9E3779B97F4A7C15)) ^ (b * np.uint64(0xC2B2AE3D27D4EB4F))
    h ^= h >> np.uint64(29)
    return np.int64(h & np.uint64(slots - 1))


@njit(cache=True, nogil=True)
def _find(keys, state, a, b):
    slots = state.size
    s = _slot(a, b, slots)
    for _ in range(_PROBES):
        if state[s] == 0:
            return -1
        if state[s] == 1 and keys[s, 0] == a and keys[s, 1] == b:
            return s
        s = (s + 1) & (slots - 1)
    return -1


@njit(cache=True, nogil=True)
def observe(f, n, dscp, keys, isn, state, cnt, row):
    """StreamOffsets.observe of f[:n], a frame leaving a host (dscp < 0: compression
    off); counts tracked / misaligned / untracked segments in cnt[row]."""
    # golden.frames.frame_fields's checks, TCP only.
    if n < 14:
        return
    l3 = 14
    et = _be16(f, 12)
    if et == 0x8100:
        if n < 18:
            return
        l3 = 18
        et = _be16(f, 16)
    if et != 0x0800 or n < l3 + 20:
        return
    ihl = np.int64(f[l3]) & 0xF
    if (np.int64(f[l3]) >> 4) != 4 or ihl < 5:
        return
    total = _be16(f, l3 + 2)
    if l3 + total > n or total < 4 * ihl or f[l3 + 9] != 6:
        return
    l4 = l3 + 4 * ihl
    end = l3 + total
    if end < l4 + 20:
        return
    start = l4 + 4 * (np.int64(f[l4 + 12]) >> 4)
    if start > end:
        return
    a = np.uint64(0)
    for i in range(8):
        a = (a << np.uint64(8)) | np.uint64(f[l3 + 12 + i])
    b = np.uint64(0)
    for i in range(4):
        b = (b << np.uint64(8)) | np.uint64(f[l4 + i])
    seq = np.uint32((np.uint32(f[l4 + 4]) << np.uint32(24)) | (np.uint32(f[l4 + 5]) << np.uint32(16))
                    | (np.uint32(f[l4 + 6]) << np.uint32(8)) | np.uint32(f[l4 + 7]))
    flags = f[l4 + 13]
    slots = state.size
    if flags & 0x02:             # SYN: (re)start the flow
        s = _find(keys, state, a, b)
        if s < 0:
            first = _slot(a, b, slots)
            s = -1
            q = first
            for _ in range(_PROBES):
                if state[q] != 1:
                    s = q
                    break
                q = (q + 1) & (slots - 1)
            if s < 0:
                s = first
        keys[s, 0] = a
        keys[s, 1] = b
        isn[s] = seq
        state[s] = 1
        return
    if flags & 0x04:             # RST: forget it
        s = _find(keys, state, a, b)
        if s >= 0:
            state[s] = 2
    if dscp < 0 or (np.int64(f[l3 + 1]) >> 2) != dscp or start == end:
        return
    s = _find(keys, state, a, b)
    if s < 0:
        cnt[row, UNTRACKED] += 1
        return
    cnt[row, TRACKED] += 1
    if (seq - isn[s] - np.uint32(1)) & np.uint32(3):
        cnt[row, MISALIGNED] += 1


# ---------------------------------------------------------------- the worker's batch

class Buffers:
    """One worker's frame buffers and scratch (no two threads share one)."""

    def __init__(self, vnet: bool = False):
        words = MAX_FRAME_BYTES // 4 + 2 * GROUP_VALUES
        # vnet: the TAPs carry virtio-net headers (drivers/tso.py); a frame to a host is
        # written from hostraw, its header, then `host`.
        self.vh = tso.VNET_HDR if vnet else 0
        self.inbuf = np.zeros(FRAME_ROOM + 64, np.uint8)
        self.wire = np.zeros(FRAME_ROOM + 64, np.uint8)
        self.hostraw = np.zeros(self.vh + FRAME_ROOM + 64, np.uint8)
        self.host = self.hostraw[self.vh:]
        self.raw = np.zeros(tso.RAW_ROOM if vnet else 1, np.uint8)   # a GSO segment as read
        self.agg = np.zeros(tso.AGG_ROOM if vnet else 1, np.uint8)   # frames to a host, coalesced
        self.ag = np.zeros(8, np.int64)
        self.dec = np.zeros(words, np.uint32)
        # [in length, wire length, host length, sample countdown, delivered,
        #  the GSO segment being cut: its length (0: none), next payload offset, frame no.]
        self.state = np.zeros(8, np.int64)


@njit(cache=True, nogil=True, inline="always")
def _mac(f, off):
    v = np.uint64(0)
    for i in range(6):
        v = (v << np.uint64(8)) | np.uint64(f[off + i])
    return v


# pump() return codes
DRAINED, SLOW, SAMPLE, READ_ERROR = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def _flush(fds, agg, ag, cnt):
    """Write the frames waiting in agg (tso.coalesce) to their host, as one."""
    if ag[tso.AG_LEN] == 0:
        return
    to = ag[tso.AG_TO]
    n = tso.seal(agg, ag)
    ag[tso.AG_LEN] = 0
    _wrote(_c_write(fds[to], agg.ctypes, n), cnt, to, ag[tso.AG_FRAMES], ag[tso.AG_BYTES])


@njit(cache=True, nogil=True)
def _wrote(wr, cnt, to, frames, nbytes):
    """Count a write(2) of `frames` frames (`nbytes` host bytes) to host `to`; whether it
    went through (EAGAIN: the host's queue is full, dropped; else its link is down)."""
    if wr < 0:
        if _errno_loc()[0] == _EAGAIN:
            cnt[to, HOST_QUEUE_DROPS] += frames
        else:
            cnt[to, HOST_ERRORS] += frames
        return False
    cnt[to, HOST_WRITES] += 1
    cnt[to, TO_HOST_FRAMES] += frames
    cnt[to, TO_HOST_BYTES] += nbytes
    return True


@njit(cache=True, nogil=True)
def pump(fd, port, fds, macs, max_frames, k, version, lut, dscp, tx_enable, rx_enable,
         deliver_flagged, check_every, tabs, keys, isn, fstate, cnt,
         inbuf, wire, hostraw, dec, st, vmask, raw, vh, agg, ag):
    """_pump, then the frames it left coalesced written (vh > 0): nothing waits in agg
    between calls, so the slow path's frames keep their order."""
    code, done = _pump(fd, port, fds, macs, max_frames, k, version, lut, dscp, tx_enable,
                       rx_enable, deliver_flagged, check_every, tabs, keys, isn, fstate, cnt,
                       inbuf, wire, hostraw, dec, st, vmask, raw, vh, agg, ag)
    if vh > 0:
        _flush(fds, agg, ag, cnt)
    return code, done


@njit(cache=True, nogil=True)
def _pump(fd, port, fds, macs, max_frames, k, version, lut, dscp, tx_enable, rx_enable,
          deliver_flagged, check_every, tabs, keys, isn, fstate, cnt,
          inbuf, wire, hostraw, dec, st, vmask, raw, vh, agg, ag):
    """Up to max_frames frames from host `port`'s TAP (fd) through TX, the wire and RX to
    the host their destination MAC names. Returns (code, frames): DRAINED (the TAP is
    empty or max_frames done), SLOW (the frame in inbuf[:st[0]] needs Python: a group,
    unknown or learned destination MAC or a source MAC that is no host's),
    SAMPLE (the frame just forwarded is left in inbuf, wire, host for a check against
    golden; st[3] counts down to it), READ_ERROR (read(2) failed, counted). After each
    frame read, st holds its length, its wire length and its length to the host (-1:
    none) and whether it was delivered: with max_frames=1 the caller captures it.

    vh > 0: the TAPs carry virtio-net headers of vh bytes; a read fills raw, and
    tso.next_frame cuts it into MTU frames in inbuf, one per turn of the loop. A segment
    is cut to its end whatever max_frames says, and one left by SLOW or SAMPLE is
    resumed by the next call (st[5] > 0), so DRAINED leaves nothing behind. Frames RX
    passed wait in agg while the next continues their TCP segment (tso.coalesce), and
    go to the host as one write."""
    me = macs[port]
    nh = macs.size
    host = hostraw[vh:]
    done = 0
    while done < max_frames or st[5] > 0:
        if vh == 0 or st[5] == 0:
            buf = raw if vh > 0 else inbuf
            n = _c_read(fd, buf.ctypes, raw.size if vh > 0 else FRAME_ROOM)
            if n < 0:
                if _errno_loc()[0] == _EAGAIN:
                    return DRAINED, done
                cnt[port, HOST_ERRORS] += 1
                return READ_ERROR, done
            cnt[port, HOST_READS] += 1
            if vh > 0:
                st[5] = n
                st[6] = 0
                st[7] = 0
        if vh > 0:
            gso = raw[1] != 0           # the header stays in raw until the next read
            n = tso.next_frame(raw, inbuf, st)
            if n < 0:
                cnt[port, HOST_ERRORS] += 1
                continue
            if gso:
                cnt[port, SEGMENTED] += 1
        done += 1
        st[0] = n
        st[1] = -1
        st[2] = -1
        st[4] = 0
        if n < 14:
            cnt[port, FORGED] += 1
            continue
        src = _mac(inbuf, 6)
        if src != me:
            other = False
            for j in range(nh):
                if macs[j] == src:
                    other = True
            if not other:
                return SLOW, done          # a MAC that is no host's: learned in Python
            cnt[port, FORGED] += 1          # another host's MAC: forged
            continue
        if inbuf[0] & 1:
            return SLOW, done              # broadcast / multicast
        dst = _mac(inbuf, 0)
        to = -1
        for j in range(nh):
            if macs[j] == dst:
                to = j
                break
        if to < 0:
            return SLOW, done
        cnt[port, FROM_HOST_FRAMES] += 1
        cnt[port, FROM_HOST_BYTES] += n
        observe(inbuf, n, dscp if tx_enable else -1, keys, isn, fstate, cnt, port)
        if to == port:
            cnt[port, TO_SELF] += 1
            continue
        w = tx_into(inbuf, n, wire, k, version, lut, dscp, tx_enable, cnt, port, dec)
        st[1] = w
        if w < 0:
            continue
        cnt[port, TO_WIRE_FRAMES] += 1
        cnt[port, TO_WIRE_BYTES] += w
        h, bad = rx_into(wire, w, host, dscp, rx_enable, cnt, to, tabs, vmask)
        st[2] = h
        if bad:
            cnt[to, FLAGGED] += 1
        if vh > 0 and not bad and tso.mergeable(host, h):
            if not tso.coalesce(agg, ag, host, h, to):
                _flush(fds, agg, ag, cnt)
                tso.start(agg, ag, host, h, to)
            st[4] = 1
        elif not bad or deliver_flagged:
            if vh > 0:
                _flush(fds, agg, ag, cnt)
                hostraw[0] = 0
            if _wrote(_c_write(fds[to], hostraw.ctypes, h + vh), cnt, to, 1, h):
                st[4] = 1
        if check_every > 0:
            st[3] -= 1
            if st[3] <= 0:
                st[3] = check_every
                return SAMPLE, done
    return DRAINED, done


def counters_dict(row) -> dict:
    """One port's row (summed over workers) as the bridge's counter names."""
    d = {c: int(row[i]) for i, c in enumerate(COLUMNS)}
    d["tagged_tcp_segments"] = d.pop("tracked")
    return d
