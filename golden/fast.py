"""The codec's fast path: compiled loops (numba) that give byte for byte what the NumPy
model gives, for the software NIC, `make bench` and users with big captures.

Why: the NumPy model works in whole-array passes with temporaries and runs below the
speed of snappy or lz4; a loop that handles each value once, in one pass, runs several
times faster. The NumPy model (compression_block.py, compression_unit.py,
decompression_block.py, decompression_unit.py, payload.py) stays the readable reference;
this file walks the same per-(k, codec) tables value by value:
  encode: per value, one row of the tables of compression_block.encode_luts, indexed by
          sign and exponent, gives the tag, the stored field and the decoded value; the
          field is written as 4 bytes and the output position moves by its width (0, 1, 2, 4), so
          the bytes past the width are overwritten by the next field (no branches);
  decode: per value, its 2-bit tag from the group's tag word, the 4 bytes at its offset,
          and the codec's table decompression_block.decode_table, as
          decompression_block.decode_into does.
Both value codecs go through the same loops; only the tables differ: "paper" (wire
version 1) and "bounded" (wire version 2, k in 1..16). Packing without the decoded
values and unpacking whole groups go through vector kernels instead (fast_kernels.py
binds the ones this CPU runs: AVX-512 VBMI2's in fast_blocks.py, AVX2's or the portable
ones in fast_groups.py, each group coded in registers with a short serial chain per
group; the same bytes, several times faster than these loops,
docs/benchmarks.md); the per-value
loops stay for the NIC's TX path (it needs the decoded values), drivers/fastpath.py and
the stream's end. The loops release the GIL (nogil), so threads can run them in
parallel on separate buffers.
Argument checks and errors are the model's own (check_codec, check_k, as_bits, make_shim,
shim_codec), in the same order. Byte positions are unsigned: numba then drops its negative-index
fix-up and merges the four byte stores into one. Each loop is compiled on first use and
kept in numba's on-disk cache, per kernel and stamped with every golden/fast*.py
(fast_host.py: the loops here compile the kernels into themselves). The decoded words
are written as native uint32: a
little-endian host is assumed (x86-64, AArch64). tests/test_golden_fast.py checks every function against
the model. `FAST` is an implementation for golden.tx_frame / rx_frame
(`impl=golden.fast.FAST`).
"""

from __future__ import annotations

import functools
import numbers

import numpy as np
from numba import njit

from .arguments import check_fits
from .compression_block import TAG_WIDTH, as_bits, check_codec, check_k, encode_luts
from .fast_blocks import _popcount, dec_consts, enc_consts
from .fast_kernels import pack_blocks, unpack_blocks
from .decompression_block import DEC_BASE, DEC_MASK, DEC_RAW, decode_table
from .payload import build_payload, shim_codec, shim_version
from .wire import GROUP_VALUES, shim_bytes

__all__ = ["fast_pack_groups", "fast_unpack_groups", "fast_compress_payload",
           "fast_compress_payload_with_decoded", "fast_decompress_payload", "ones_sum", "FAST",
           "warm_up", "CRC32_TABLE", "check_word_at", "pack_room", "unpack_room",
           "fast_pack_groups_into", "fast_unpack_groups_into", "group_offsets"]

_U1, _U2, _U3 = np.uint64(1), np.uint64(2), np.uint64(3)
_MAX_GROUP = 2 + 4 * GROUP_VALUES   # 34 bytes: a tag word and 8 raw floats


@functools.lru_cache(maxsize=None)
def _lut(k, codec):
    """compression_block.encode_luts(k, codec) as one uint32[512, 6] table: mask, shift,
    or, tag, dmask, dor."""
    tag, mask, shift, orv, dmask, _, _, dor = encode_luts(k, codec)
    return np.ascontiguousarray(np.stack([mask, shift, orv, tag.astype(np.uint32), dmask, dor],
                                         axis=1))


# Per tag (rows 0..3): how decompression_block.decode_into reads a field (the table row
# its fields start at, the mask of its bits, the mask that lets a raw float through) and
# its width.
_TAG_DEC = np.ascontiguousarray(np.stack([DEC_BASE, DEC_MASK, DEC_RAW,
                                          TAG_WIDTH.astype(np.uint32)], axis=1))


@njit(cache=True, nogil=True, inline="always")
def _put4(out, pos, v):
    """The 4 little-endian bytes of uint32 v at out[pos] (pos uint64)."""
    out[pos] = np.uint8(v & np.uint32(0xFF))
    out[pos + _U1] = np.uint8((v >> np.uint32(8)) & np.uint32(0xFF))
    out[pos + _U2] = np.uint8((v >> np.uint32(16)) & np.uint32(0xFF))
    out[pos + _U3] = np.uint8(v >> np.uint32(24))


@njit(cache=True, nogil=True, inline="always")
def _get4(buf, pos):
    """The little-endian uint32 at buf[pos] (pos uint64)."""
    return (np.uint32(buf[pos]) | (np.uint32(buf[pos + _U1]) << np.uint32(8))
            | (np.uint32(buf[pos + _U2]) << np.uint32(16)) | (np.uint32(buf[pos + _U3]) << np.uint32(24)))


@njit(cache=True, nogil=True, inline="always")
def _encode_group(f, i0, m, lut, out, pos, decoded, want_decoded):
    """One group of the m values f[i0:i0 + m] at out[pos]; returns the position after it.

    Needs 3 bytes of room past the group's end (every field is written as 4 bytes)."""
    tw_pos = pos
    pos += _U2
    tw = np.uint32(0)
    for j in range(m):
        x = f[i0 + j]
        ix = np.uint64(x >> np.uint32(23))
        t = lut[ix, 3]
        tw |= t << np.uint32(2 * j)
        if want_decoded:
            decoded[i0 + j] = (x & lut[ix, 4]) | lut[ix, 5]
        _put4(out, pos, ((x & lut[ix, 0]) >> lut[ix, 1]) | lut[ix, 2])
        pos += np.uint64(t + ((t >> np.uint32(1)) & t & np.uint32(1)))  # 0, 1, 2, 4 bytes
    out[tw_pos] = np.uint8(tw & np.uint32(0xFF))
    out[tw_pos + _U1] = np.uint8(tw >> np.uint32(8))
    return pos


@njit(cache=True, nogil=True)
def _encode(f, lut, out, decoded, want_decoded):
    """The groups of f's values at the start of out (out needs 3 spare bytes past their
    end); fills decoded when want_decoded. Returns the groups' byte length."""
    n = f.size
    full = n // 8
    pos = np.uint64(0)
    for g in range(full):
        pos = _encode_group(f, 8 * g, 8, lut, out, pos, decoded, want_decoded)
    if n > 8 * full:
        pos = _encode_group(f, 8 * full, n - 8 * full, lut, out, pos, decoded, want_decoded)
    return pos


@njit(cache=True, nogil=True, inline="always")
def _decode_group(buf, pos, out, i0, table):
    """One group at buf[pos] into out[i0:i0 + 8]; returns the position after it.

    Reads the 4 bytes at each field's offset: needs 3 bytes of buf past the group."""
    tw = np.uint32(buf[pos]) | (np.uint32(buf[pos + _U1]) << np.uint32(8))
    pos += _U2
    for j in range(8):
        t = (tw >> np.uint32(2 * j)) & np.uint32(3)
        v = _get4(buf, pos)
        out[i0 + j] = table[_TAG_DEC[t, 0] + (v & _TAG_DEC[t, 1])] | (v & _TAG_DEC[t, 2])
        pos += np.uint64(_TAG_DEC[t, 3])
    return pos


@njit(cache=True, nogil=True)
def _unpack_fast(data, n, r, out, table, mul, add, s8, s16):
    """_unpack through the block kernel first ((mul, add, s8, s16): dec_consts of the
    table's codec), the per-group loop for the rest."""
    g, pos = unpack_blocks(data, (n + 7) // 8, out, mul, add, s8, s16)
    return _unpack_from(data, n, r, out, table, g, pos)


@njit(cache=True, nogil=True)
def _unpack(data, n, r, out, table):
    """Decode n values from the groups at the start of data (read as if zero bytes followed
    its end) into out[:n], out having room for whole groups and one word more; the r bytes
    after the groups go little-endian into out[n]. Returns the groups' byte length.
    The per-group loop only (drivers/fastpath.py calls it per frame)."""
    return _unpack_from(data, n, r, out, table, 0, np.uint64(0))


@njit(cache=True, nogil=True)
def _unpack_from(data, n, r, out, table, g, pos):
    """_unpack from group g at byte pos on."""
    groups = (n + 7) // 8
    size = np.uint64(data.size)
    while g < groups and pos + np.uint64(_MAX_GROUP + 3) <= size:
        pos = _decode_group(data, pos, out, 8 * g, table)
        g += 1
    if g < groups and pos < size:
        # The last few groups inside the data: from a zero-padded copy of its end.
        pad = np.zeros(2 * (_MAX_GROUP + 3), np.uint8)
        rest = size - pos
        pad[:rest] = data[pos:]
        p = np.uint64(0)
        while g < groups and p < rest:
            p = _decode_group(pad, p, out, 8 * g, table)
            g += 1
        pos += p
    # Groups past the end read as zero tag words: 8 values of +0.0, 2 bytes each.
    out[8 * g:8 * groups] = 0
    pos += np.uint64(2 * (groups - g))
    tail = np.uint32(0)
    for i in range(r):
        if pos + np.uint64(i) < size:
            tail |= np.uint32(data[pos + np.uint64(i)]) << np.uint32(8 * i)
    if out.size > n:        # an out of exactly n words (n whole groups) has no tail word
        out[n] = tail
    return pos


@njit(cache=True, nogil=True)
def _ones_sum(data, start):
    total = np.uint64(start)
    m = data.size // 2
    for i in range(m):
        total += (np.uint64(data[2 * i]) << np.uint64(8)) | np.uint64(data[2 * i + 1])
    if data.size % 2:
        total += np.uint64(data[data.size - 1]) << np.uint64(8)
    while total > np.uint64(0xFFFF):
        total = (total & np.uint64(0xFFFF)) + (total >> np.uint64(16))
    return total


def _crc32_table():
    """The byte-at-a-time table of the reflected CRC-32 (polynomial 0xEDB88320 reversed)."""
    t = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        t = np.where(t & 1, (t >> np.uint32(1)) ^ np.uint32(0xEDB88320), t >> np.uint32(1))
    return t.astype(np.uint32)


CRC32_TABLE = _crc32_table()


@njit(cache=True, nogil=True, inline="always")
def _crc_byte(c, b, table):
    return table[(c ^ np.uint32(b)) & np.uint32(0xFF)] ^ (c >> np.uint32(8))


@njit(cache=True, nogil=True)
def _crc_bytes(c, f, start, count, table):
    for i in range(count):
        c = _crc_byte(c, f[start + i], table)
    return c


@njit(cache=True, nogil=True)
def check_word_at(f, l3, l4, proto, comp_len, p, table):
    """golden.shim_check.check_word of the frame f (uint8) read in place: the check
    message's fields from the headers at l3 / l4, |C| = comp_len, the shim at p."""
    c = np.uint32(0xFFFFFFFF)
    c = _crc_bytes(c, f, l3 + 12, 8, table)          # source, destination address
    c = _crc_bytes(c, f, l3 + 4, 2, table)           # IP identification
    c = _crc_byte(c, proto, table)
    c = _crc_byte(c, 0, table)
    c = _crc_bytes(c, f, l4, 4, table)               # ports
    if proto == 6:
        c = _crc_bytes(c, f, l4 + 4, 4, table)       # TCP sequence number
    else:
        for _ in range(4):
            c = _crc_byte(c, 0, table)
    c = _crc_byte(c, (comp_len >> 8) & 0xFF, table)
    c = _crc_byte(c, comp_len & 0xFF, table)
    c = _crc_bytes(c, f, p, 4, table)                # shim bytes 0..3
    return c ^ np.uint32(0xFFFFFFFF)


_NO_DECODED = np.zeros(0, np.uint32)
_NO_MARKS = np.zeros(0, np.int64)


def _groups(bits, k, codec, decoded=None):
    """The groups of bits (flat contiguous uint32, k and codec checked) as bytes; fills
    decoded (uint32[n]) with the restored bit patterns when given."""
    out = np.empty(2 * -(-bits.size // GROUP_VALUES) + 4 * bits.size + 7, np.uint8)
    if decoded is None:
        end = pack_blocks(bits, *enc_consts(k, codec), out, _NO_MARKS, 0, 0, 0)
    else:
        end = _encode(bits, _lut(k, codec), out, decoded, True)
    return out[:int(end)].tobytes()


def fast_pack_groups(bits, k, codec="paper"):
    """golden.pack_groups, compiled: the same bytes, the same errors.

    ``bits``: float32 values as their uint32 bit patterns (``a.view(np.uint32)``), any
    shape, read in C order; ``codec``: "paper" (the block-level default, as
    golden.pack_groups) or "bounded" (k in 1..16). Returns the groups only, no shim:
    what golden.encode(a, k, codec) returns. Releases the GIL while it runs."""
    bits = as_bits(bits).ravel()
    k = check_k(k, check_codec(codec))
    if bits.size == 0:
        return b""
    return _groups(np.ascontiguousarray(bits), k, codec)


def _unpack_into(data, n, r, k, codec):
    """(out uint32, consumed) of _unpack, out sized for whole groups and the tail word."""
    out = np.empty(-(-n // GROUP_VALUES) * GROUP_VALUES + 1, np.uint32)
    return out, int(_unpack_fast(data, int(n), r, out, decode_table(k, codec), *dec_consts(k, codec)))


def fast_unpack_groups(buf, n, k=None, codec="paper"):
    """golden.unpack_groups, compiled: ``(bits uint32[n], consumed, ok)``.

    ``buf``: groups as fast_pack_groups / golden.encode give them (bytes-like); ``n``:
    the number of values, at most what buf can hold (8 per 2 bytes; more is a ValueError
    where golden.unpack_groups decodes the missing groups as zeros); the bounded codec
    needs the k they were encoded with.
    ``consumed`` is the groups' byte length, ``ok`` False when they run past the end of
    buf (missing bytes read as zeros). ``bits.view(np.float32)`` are the values.
    Releases the GIL while it runs."""
    if n < 0:
        raise ValueError(f"value count must be >= 0, got {n}")
    table = decode_table(k, codec)  # checks codec and k
    data = np.frombuffer(buf if isinstance(buf, bytes) else bytes(buf), dtype=np.uint8)
    if -(-n // GROUP_VALUES) == 0:
        return np.zeros(0, np.uint32), 0, True
    if isinstance(n, numbers.Integral):
        # Before the n values are allocated: a count past what buf can hold would only
        # decode zeros (ok False), and 2^40 of them do not fit in memory.
        check_fits(n, data.size)
    out = np.empty(-(-n // GROUP_VALUES) * GROUP_VALUES + 1, np.uint32)
    consumed = int(_unpack_fast(data, int(n), 0, out, table, *dec_consts(k, codec)))
    return out[:n], consumed, consumed <= data.size


def pack_room(n: int) -> int:
    """Bytes fast_pack_groups_into needs for n values: the largest groups and 7 spare."""
    return 2 * -(-n // GROUP_VALUES) + 4 * n + 7


def unpack_room(n: int) -> int:
    """Words fast_unpack_groups_into needs for n values: whole groups and one more (where
    n is a multiple of 8, n words also do: see fast_unpack_groups_into)."""
    return -(-n // GROUP_VALUES) * GROUP_VALUES + 1


def _out_array(out, dtype, need, what):
    if not isinstance(out, np.ndarray) or out.dtype != dtype or out.ndim != 1 \
            or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"{what} must be a writable contiguous 1-D {np.dtype(dtype).name} array")
    if out.size < need:
        raise ValueError(f"{what} holds {out.size} elements, {need} needed")
    return out


def fast_pack_groups_into(bits, out, k, codec="paper", index=None, every: int = 1) -> int:
    """fast_pack_groups into a caller's buffer (no allocation, no copy): the groups go to
    the start of ``out`` (uint8, at least pack_room(bits.size) bytes; the bytes past the
    groups are scratch); returns their byte length. ``bits``: a contiguous 1-D uint32
    array of float32 bit patterns. ``index``: an int64 array of at least
    ceil(groups / every) entries, filled while packing with the byte offsets of groups 0,
    every, 2 every, ... (what group_offsets gives, without its walk)."""
    k = check_k(k, check_codec(codec))
    bits = _in_bits(bits)
    _out_array(out, np.uint8, pack_room(bits.size), "out")
    marks, step = _NO_MARKS, 0
    if index is not None:
        if isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 1:
            raise ValueError(f"every must be a positive group count, got {every!r}")
        step = int(every)
        marks = _out_array(index, np.int64, -(-(-(-bits.size // GROUP_VALUES)) // step), "index")
    if bits.size == 0:
        return 0
    t, mlim, w8 = enc_consts(k, codec)
    return int(pack_blocks(bits, t, mlim, w8, out, marks, step, 0, 0))


def fast_unpack_groups_into(buf, n, out, k=None, codec="paper"):
    """fast_unpack_groups into a caller's buffer: the n bit patterns go to out[:n] (uint32,
    at least unpack_room(n) words, the words past n scratch; or, where n is a multiple of
    8, exactly n words: then nothing past them is written, so threads can decode pieces of
    one stream into adjacent slices of one array). Returns (consumed, ok) as
    fast_unpack_groups does. ``buf``: a bytes-like object or a uint8 array."""
    if n < 0:
        raise ValueError(f"value count must be >= 0, got {n}")
    table = decode_table(k, codec)  # checks codec and k
    data = buf if isinstance(buf, np.ndarray) and buf.dtype == np.uint8 and buf.ndim == 1 \
        else np.frombuffer(buf, dtype=np.uint8)
    exact = n % GROUP_VALUES == 0 and isinstance(out, np.ndarray) and out.size == n
    _out_array(out, np.uint32, n if exact else unpack_room(n), "out")
    if n == 0:
        return 0, True
    consumed = int(_unpack_fast(np.ascontiguousarray(data), int(n), 0, out, table,
                                *dec_consts(k, codec)))
    return consumed, consumed <= data.size


@njit(cache=True, nogil=True)
def _group_starts(data, groups, every, starts):
    """starts[i] = the byte offset of group i * every; returns where the last group ends
    (past data's end when the groups run past it: then the later starts are not set)."""
    size = np.uint64(data.size)
    pos = np.uint64(0)
    for g in range(groups):
        if g % every == 0:
            starts[g // every] = pos
        if pos + _U2 > size:
            return size + _U2
        tw = np.uint64(data[pos]) | (np.uint64(data[pos + _U1]) << np.uint64(8))
        lo = tw & np.uint64(0x5555)
        hi = (tw >> _U1) & np.uint64(0x5555)
        pos += _U2 + _popcount(lo) + (_popcount(hi) << _U1) + _popcount(lo & hi)
    return pos


def group_offsets(buf, n: int, every: int = 1):
    """(offsets, end) of the groups of n values at the start of ``buf`` (a uint8 array):
    offsets (int64) of groups 0, every, 2 every, ..., end the byte after the last group,
    larger than buf when the groups run past its end (the offsets past it are -1).
    For an index that lets a decoder start at every ``every``-th group."""
    if n < 0 or every < 1:
        raise ValueError(f"value count must be >= 0 and every >= 1, got {n}, {every}")
    groups = -(-n // GROUP_VALUES)
    starts = np.full(-(-groups // every), -1, np.int64)
    end = int(_group_starts(np.ascontiguousarray(buf, np.uint8), groups, every, starts))
    return starts, end


def _in_bits(bits):
    if not isinstance(bits, np.ndarray) or bits.dtype != np.uint32 or bits.ndim != 1 \
            or not bits.flags.c_contiguous:
        raise ValueError("bits must be a contiguous 1-D uint32 array (float32 bit patterns)")
    return bits


def _compress(payload, k, with_decoded, codec, version=None):
    """golden.payload's compress_payload, compiled: the same steps (build_payload), the
    same results and errors."""
    return build_payload(payload, k, codec, with_decoded,
                         lambda values, decoded: _groups(values, k, codec, decoded), version)


def fast_compress_payload(payload, k, codec="paper", version=None):
    """golden.compress_payload, compiled: C = shim || groups || tail bytes."""
    return _compress(bytes(payload), k, False, codec, version)[0]


def fast_compress_payload_with_decoded(payload, k, codec="paper", version=None):
    """golden.payload.compress_payload_with_decoded, compiled: (C, D) from one pass, D being
    what the receiver restores (the TX engine needs it for the L4 checksum)."""
    return _compress(bytes(payload), k, True, codec, version)


def fast_decompress_payload(comp):
    """golden.decompress_payload, compiled: ``(D, bad)``, D exactly L bytes, decoded with
    the codec (and, version 2, the k) its shim names."""
    comp = bytes(comp)
    length, codec, k = shim_codec(comp)
    stream = np.frombuffer(comp, dtype=np.uint8)[shim_bytes(shim_version(comp)):]
    n, r = length // 4, length % 4
    out, consumed = _unpack_into(stream, n, r, k, codec)
    return out.view(np.uint8)[:length].tobytes(), consumed + r != stream.size


def ones_sum(data, start=0):
    """golden.ones_sum, compiled."""
    return int(_ones_sum(np.frombuffer(bytes(data) if not isinstance(data, bytes) else data,
                                       dtype=np.uint8), start))


class _Impl:
    """What tx_frame / rx_frame call for the payload work (``compress(payload, k, codec,
    version)`` -> (C, D), ``decompress(comp)`` -> (D, bad)) and the L4 checksum."""

    def __init__(self, name, compress, decompress, csum):
        self.name, self.compress, self.decompress, self.ones_sum = name, compress, decompress, csum

    def __repr__(self):
        return f"<impl {self.name}>"


FAST = _Impl("fast", fast_compress_payload_with_decoded, fast_decompress_payload, ones_sum)


def warm_up():
    """Compile (or load from numba's cache) the loops now, not on the first frame."""
    x = np.array([1.0, 1e-3, 1e-30, -2.0, 0.1, 3e-3, 0.0, 7.0, 1e-4], np.float32).tobytes() + b"\x01"
    for codec in ("paper", "bounded"):
        fast_decompress_payload(fast_compress_payload_with_decoded(x, 10, codec)[0])
        fast_decompress_payload(fast_compress_payload(x, 10, codec))
        fast_unpack_groups(fast_pack_groups(np.frombuffer(x[:36], "<u4").copy(), 10, codec), 9,
                           10, codec)
    ones_sum(x)
