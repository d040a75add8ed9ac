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
values and unpacking whole groups go through block kernels instead (_pack_blocks,
_unpack_blocks, below: vectorised arithmetic, a short serial chain per group; the same
bytes, pack about 2.7x and unpack 1.5x faster here, docs/benchmarks.md); the per-value
loops stay for the NIC's TX path (it needs the decoded values), drivers/fastpath.py and
the stream's end. The loops release the GIL (nogil), so threads can run them in
parallel on separate buffers.
Argument checks and errors are the model's own (check_codec, check_k, as_bits, make_shim,
shim_codec), in the same order. Byte positions are unsigned: numba then drops its negative-index
fix-up and merges the four byte stores into one. Each loop is compiled on first use and
kept in numba's on-disk cache. The decoded words are written as native uint32: a
little-endian host is assumed (x86-64, AArch64). tests/test_golden_fast.py checks every function against
the model. `FAST` is an implementation for golden.tx_frame / rx_frame
(`impl=golden.fast.FAST`).
"""

from __future__ import annotations

import functools
import numbers

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from .arguments import check_fits
from .compression_block import (TAG_WIDTH, as_bits, band_limits, check_codec, check_k,
                                encode_luts)
from .decompression_block import DEC_BASE, DEC_MASK, DEC_RAW, decode_table
from .payload import build_payload, shim_codec, shim_version
from .wire import GROUP_VALUES, shim_bytes

__all__ = ["fast_pack_groups", "fast_unpack_groups", "fast_compress_payload",
           "fast_compress_payload_with_decoded", "fast_decompress_payload", "ones_sum", "FAST",
           "warm_up", "CRC32_TABLE", "check_word_at", "pack_room", "unpack_room",
           "fast_pack_groups_into", "fast_unpack_groups_into"]

_U1, _U2, _U3 = np.uint64(1), np.uint64(2), np.uint64(3)
_u8, _u16, _u32, _u64 = np.uint8, np.uint16, np.uint32, np.uint64
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


# ---------------------------------------------------------------- the block kernels
# The per-value loops above carry a serial chain (the output position) through every
# value. The block kernels below give the same bytes faster (measured by `make bench`):
# per block of _BLOCK values, arithmetic the compiler vectorises (no table gathers; each
# step cast back to 32 bits so the vectors stay 32-bit wide) computes every field and
# width, then pairs of fields are joined into one 64-bit word, and only the short serial
# part is left: one 8-byte store per pair and one add per group.

_BLOCK = 1024               # values per block of the block packer (its temporaries stay in L1)
_BLOCK_GROUPS = 128         # groups per block of the block unpacker
_SWAR1 = np.uint64(0x0101010101010101)


@intrinsic
def _popcount(typingctx, x):
    """The population count of a uint64 (LLVM's ctpop: one instruction where the CPU
    has one)."""
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return types.uint64(types.uint64), codegen


@intrinsic
def _clz32(typingctx, x):
    """Leading zero bits of a nonzero uint32 (LLVM's ctlz; vectorises)."""
    def codegen(context, builder, signature, args):
        return builder.ctlz(args[0], context.get_constant(types.boolean, True))
    return types.uint32(types.uint32), codegen


@njit(cache=True, nogil=True, inline="always")
def _field(x, t, mlim, w8):
    """(stored field, width in bytes) of the bit pattern x: Algorithm 2 as arithmetic, the
    same results as the rows of encode_luts. t, mlim: band_limits; w8: the 8-bit field's
    fraction bits (7, or fl + 7 for the bounded codec). A zero-tag field is 0 so that it
    adds nothing to the word of its pair."""
    e = _u32(_u32(x >> _u32(23)) & _u32(0xFF))
    b16 = e >= mlim
    w = _u32(15) if b16 else w8
    sh = _u32(min(_u32(_u32(150) - min(_u32(e + w), _u32(150))), _u32(31)))
    q = _u32(_u32(_u32(x & _u32(0x7FFFFF)) | _u32(0x800000)) >> sh)
    fv = _u32(q | _u32(_u32(x >> _u32(31)) << (_u32(15) if b16 else _u32(7))))
    if e >= _u32(127):
        return x, _u32(4)
    if e < t:
        return _u32(0), _u32(0)
    return fv, (_u32(2) if b16 else _u32(1))


@njit(cache=True, nogil=True, inline="always")
def _put8(out, pos, v):
    """The 8 little-endian bytes of uint64 v at out[pos] (merged into one store)."""
    for b in range(8):
        out[pos + _u64(b)] = _u8((v >> _u64(8 * b)) & _u64(0xFF))


@njit(cache=True, nogil=True)
def _pack_blocks(f, t, mlim, w8, out):
    """The groups of f's values at the start of out (7 spare bytes past their end), as
    _encode gives them; returns their byte length. A last partial block is padded with
    +0.0, which codes to nothing: its partial group comes out as _encode's."""
    n = f.size
    fld = np.empty(_BLOCK, np.uint32)
    wid = np.empty(_BLOCK, np.uint8)
    pword = np.empty(_BLOCK // 2, np.uint64)
    pwid = np.empty(_BLOCK // 2, np.uint8)
    tws = np.empty(_BLOCK // 8, np.uint16)
    glen = np.empty(_BLOCK // 8, np.uint8)
    pad = np.zeros(_BLOCK, np.uint32)
    wid64 = wid.view(np.uint64)
    pos = _u64(0)
    for b0 in range(0, n, _BLOCK):
        if b0 + _BLOCK <= n:
            src = f[b0:b0 + _BLOCK]
            ngroups = _BLOCK // 8
        else:
            pad[:n - b0] = f[b0:]
            pad[n - b0:] = 0
            src = pad
            ngroups = (n - b0 + 7) // 8
        for i in range(_BLOCK):                 # vectorised
            fv, wd = _field(src[i], t, mlim, w8)
            fld[i] = fv
            wid[i] = _u8(wd)
        for i in range(_BLOCK // 2):            # vectorised: a pair's bytes in one word
            w0 = _u32(wid[2 * i])
            pword[i] = _u64(fld[2 * i]) | (_u64(fld[2 * i + 1]) << (_u64(w0) << _u64(3)))
            pwid[i] = _u8(w0 + _u32(wid[2 * i + 1]))
        for g in range(_BLOCK // 8):            # a group's 8 widths as the bytes of a word
            w = wid64[g]
            x = w - ((w >> _u64(2)) & _SWAR1)   # width 0, 1, 2, 4 -> tag 0, 1, 2, 3
            x = (x | (x >> _u64(6))) & _u64(0x000F000F000F000F)
            x = (x | (x >> _u64(12))) & _u64(0x000000FF000000FF)
            tws[g] = _u16((x | (x >> _u64(24))) & _u64(0xFFFF))
            glen[g] = _u8(((w * _SWAR1) >> _u64(56)) + _u64(2))
        for g in range(ngroups):                # the serial part
            tw = tws[g]
            out[pos] = _u8(tw & _u16(0xFF))
            out[pos + _U1] = _u8(tw >> _u16(8))
            p = pos + _U2
            pos += _u64(glen[g])
            for j in range(4):
                _put8(out, p, pword[4 * g + j])
                p += _u64(pwid[4 * g + j])
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
def _unpack_blocks(data, groups, out, mul, add, e8, e16):
    """Decode whole blocks of groups from the start of data into out while a block surely
    lies inside data; returns (groups decoded, their byte length). _unpack goes on from there.

    Per group, the serial part is only the next group's position (from the tag word's
    popcounts); the fields' offsets come from a prefix sum over the widths as the bytes of
    one word, the fields are copied out raw with their tags, and the values are then
    computed with vectorised integer arithmetic: a field {s, q} decodes to
    (-1)^s (q mul + add) 2^-e, e = e8 or e16 (decode_table's values; the paper's codec:
    mul 1, add 0, q = 0 gives +0.0; the bounded codec: mul 2, add 1), its float32 bits
    built from the leading-zero count."""
    size = _u64(data.size)
    raw = np.empty(8 * _BLOCK_GROUPS, np.uint32)
    tags = np.empty(8 * _BLOCK_GROUPS, np.uint8)
    tags64 = tags.view(np.uint64)
    pos = _u64(0)
    g0 = 0
    while g0 + _BLOCK_GROUPS <= groups and pos + _u64(_BLOCK_GROUPS * _MAX_GROUP + 4) <= size:
        for g in range(_BLOCK_GROUPS):
            tw = _u32(data[pos]) | (_u32(data[pos + _U1]) << _u32(8))
            lo = _u64(tw & _u32(0x5555))
            hi = _u64((tw >> _u32(1)) & _u32(0x5555))
            nxt = pos + _U2 + _popcount(lo) + (_popcount(hi) << _U1) + _popcount(lo & hi)
            x = _u64(tw)                        # the 8 tags as the bytes of a word
            x = (x | (x << _u64(24))) & _u64(0x000000FF000000FF)
            x = (x | (x << _u64(12))) & _u64(0x000F000F000F000F)
            x = (x | (x << _u64(6))) & _u64(0x0303030303030303)
            tags64[g] = x
            w = x + ((x >> _U1) & x & _SWAR1)   # tag -> width 0, 1, 2, 4
            offs = (w * _SWAR1) << _u64(8)      # each field's offset in the group
            base = pos + _U2
            for j in range(8):
                raw[8 * g + j] = _get4(data, base + ((offs >> _u64(8 * j)) & _u64(0xFF)))
            pos = nxt
        block = out[8 * g0:8 * (g0 + _BLOCK_GROUPS)]
        for i in range(8 * _BLOCK_GROUPS):      # vectorised
            t = _u32(tags[i])
            v = raw[i]
            b16 = t == _u32(2)
            fv = _u32(v & (_u32(0xFFFF) if b16 else _u32(0xFF)))
            sb = _u32(15) if b16 else _u32(7)
            num = _u32(_u32(_u32(fv & _u32(_u32(_u32(1) << sb) - _u32(1))) * mul) + add)
            top = _u32(_u32(31) - _clz32(num | _u32(1)))
            bits = _u32(_u32(_u32(top + (e16 if b16 else e8)) << _u32(23))
                        | _u32(_u32(num << _u32(_u32(23) - top)) & _u32(0x7FFFFF))
                        | _u32(_u32(fv >> sb) << _u32(31)))
            dec = _u32(0) if num == _u32(0) else bits
            block[i] = v if t == _u32(3) else (_u32(0) if t == _u32(0) else dec)
        g0 += _BLOCK_GROUPS
    return g0, pos


@functools.lru_cache(maxsize=None)
def _dec_consts(k, codec):
    """_unpack_blocks' (mul, add, e8, e16) of a codec: biased exponents of the steps."""
    if codec == "paper":
        return _u32(1), _u32(0), _u32(127 - 7), _u32(127 - 15)
    return _u32(2), _u32(1), _u32(127 - (k // 2 + 8)), _u32(127 - 16)


@njit(cache=True, nogil=True)
def _unpack_fast(data, n, r, out, table, mul, add, e8, e16):
    """_unpack through the block kernel first ((mul, add, e8, e16): _dec_consts of the
    table's codec), the per-group loop for the rest."""
    g, pos = _unpack_blocks(data, (n + 7) // 8, out, mul, add, e8, e16)
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


@functools.lru_cache(maxsize=None)
def _enc_consts(k, codec):
    """_pack_blocks' (t, mlim, w8) of a codec at 2^-k."""
    t, mlim = band_limits(k)
    return _u32(t), _u32(mlim), _u32(7 + (k // 2 if codec == "bounded" else 0))


def _groups(bits, k, codec, decoded=None):
    """The groups of bits (flat contiguous uint32, k and codec checked) as bytes; fills
    decoded (uint32[n]) with the restored bit patterns when given."""
    out = np.empty(2 * -(-bits.size // GROUP_VALUES) + 4 * bits.size + 7, np.uint8)
    if decoded is None:
        end = _pack_blocks(bits, *_enc_consts(k, codec), out)
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
    return out, int(_unpack_fast(data, int(n), r, out, decode_table(k, codec), *_dec_consts(k, codec)))


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
    consumed = int(_unpack_fast(data, int(n), 0, out, table, *_dec_consts(k, codec)))
    return out[:n], consumed, consumed <= data.size


def pack_room(n: int) -> int:
    """Bytes fast_pack_groups_into needs for n values: the largest groups and 7 spare."""
    return 2 * -(-n // GROUP_VALUES) + 4 * n + 7


def unpack_room(n: int) -> int:
    """Words fast_unpack_groups_into needs for n values: whole groups and one more."""
    return -(-n // GROUP_VALUES) * GROUP_VALUES + 1


def _out_array(out, dtype, need, what):
    if not isinstance(out, np.ndarray) or out.dtype != dtype or out.ndim != 1 \
            or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"{what} must be a writable contiguous 1-D {np.dtype(dtype).name} array")
    if out.size < need:
        raise ValueError(f"{what} holds {out.size} elements, {need} needed")
    return out


def fast_pack_groups_into(bits, out, k, codec="paper") -> int:
    """fast_pack_groups into a caller's buffer (no allocation, no copy): the groups go to
    the start of ``out`` (uint8, at least pack_room(bits.size) bytes; the bytes past the
    groups are scratch); returns their byte length. ``bits``: a contiguous 1-D uint32
    array of float32 bit patterns."""
    k = check_k(k, check_codec(codec))
    bits = _in_bits(bits)
    _out_array(out, np.uint8, pack_room(bits.size), "out")
    if bits.size == 0:
        return 0
    t, mlim, w8 = _enc_consts(k, codec)
    return int(_pack_blocks(bits, t, mlim, w8, out))


def fast_unpack_groups_into(buf, n, out, k=None, codec="paper"):
    """fast_unpack_groups into a caller's buffer: the n bit patterns go to out[:n] (uint32,
    at least unpack_room(n) words; the words past n are scratch). Returns (consumed, ok)
    as fast_unpack_groups does. ``buf``: a bytes-like object or a uint8 array."""
    if n < 0:
        raise ValueError(f"value count must be >= 0, got {n}")
    table = decode_table(k, codec)  # checks codec and k
    data = buf if isinstance(buf, np.ndarray) and buf.dtype == np.uint8 and buf.ndim == 1 \
        else np.frombuffer(buf, dtype=np.uint8)
    _out_array(out, np.uint32, unpack_room(n), "out")
    if n == 0:
        return 0, True
    consumed = int(_unpack_fast(np.ascontiguousarray(data), int(n), 0, out, table,
                                *_dec_consts(k, codec)))
    return consumed, consumed <= data.size


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
