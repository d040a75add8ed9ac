"""golden.fast's decoder for a group stream that comes with an index (the ring's framing:
the byte offset of every `every`-th group; never the NIC's wire, which has none and is
decoded by fast_blocks.unpack_blocks).

Why: without an index one walk goes from group to group (tag word, the next offset from
its widths), a chain that alone takes longer than half a cached copy of the output
(docs/benchmarks.md). With the index the blocks between its entries are independent, so
this decoder walks CHAINS blocks at once (their steps interleaved, each chain's latency
hidden behind the others' work) and decodes as it walks, two groups (of two
neighbouring blocks) per 16-lane vector:
  per group, scalar: its tag word (one 2-byte load), then one 64-bit word E = T1[low
          byte] + T2[high byte] from two 256-entry tables: the 32-bit expand mask of its
          fields, its lanes' tag-1, tag-3 and tag-0 masks and its byte length, so that
          the next offset is one add away;
  per pair, vector: each group's fields copied into 8 32-bit lanes by one masked
          expanding load (vpexpandb) whose mask puts an 8-bit field in the lane's byte
          1, so that every field is a 16-bit sign-magnitude number {s at bit 15, q
          below} (an 8-bit q is q8 << 8); the 16 lanes decoded at once: (-1)^s (q16 mul
          + add_t) scale_t, add_t and scale_t per tag (8-bit fields: add << 8, the 8-bit
          step / 256), converted as a signed integer (the paper's q = 0 gives +0.0) and
          multiplied by a power of two: exact, the bits of decode_table; a raw field
          (tag 3) passes as its bits, tag 0 gives +0.0.
Only blocks that start at least every * 34 + 2 bytes before the data's end run here, so
no walk, whatever the bytes, reads outside the data; each block must end where the next
index entry says (checked after it is decoded: a mismatch is an error, the values are
then not used). fast.py decodes the blocks near the end with its checked per-group loop.
Needs AVX-512 VBMI2 (vpexpandb: fast_blocks.HAS_EXPAND) to run at speed; elsewhere LLVM
spells the expanding load out (correct, slow). A little-endian host is assumed.
numba's on-disk cache keys these loops on this file only: after editing fast_blocks.py
(whose loads are compiled in here) touch this file too, as fast.py.
"""

from __future__ import annotations

import functools
import numbers

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from llvmlite import ir

from .decompression_block import decode_table
from .fast_blocks import HAS_EXPAND, _byte_ptr, _load16, dec_consts
from .wire import GROUP_VALUES

__all__ = ["fast_unpack_groups_indexed_into", "unpack_indexed", "dec16_consts", "group_tables",
           "CHAINS", "MAX_GROUP"]

CHAINS = 8            # blocks walked at once
MAX_GROUP = 34        # bytes: a tag word and 8 raw floats
_I8, _I32, _I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)


def _tables():
    """(T1, T2): per tag-word byte, its 4 lanes' part of E (T1: lanes 0-3 and the tag
    word's 2 bytes, T2: lanes 4-7). E's fields: bits 0-31 the expand mask (nibble per
    lane: tag 0 none, 1 byte 1, 2 bytes 0-1, 3 bytes 0-3), 32-39 the tag-1 lanes, 40-47
    the tag-3 lanes, 48-55 the tag-0 lanes, 56-63 the group's byte length."""
    nib, width = (0b0000, 0b0010, 0b0011, 0b1111), (0, 1, 2, 4)
    t = np.zeros((2, 256), np.uint64)
    for half in range(2):
        for b in range(256):
            e = 2 if half == 0 else 0
            e <<= 56
            for j in range(4):
                tag, lane = (b >> (2 * j)) & 3, 4 * half + j
                e += nib[tag] << (4 * lane)
                e += {1: 1 << (32 + lane), 3: 1 << (40 + lane), 0: 1 << (48 + lane)}.get(tag, 0)
                e += width[tag] << 56
            t[half, b] = e
    return t


group_tables = _tables()


def dec16_consts(mul, add, s8, s16):
    """(mshift, add8, add16, sc8, sc16) of fast_blocks.dec_consts' (mul, add, s8, s16)
    for fields read as 16-bit numbers: an 8-bit q sits 8 bits up, so its add is 256 add
    and its step s8 / 256."""
    return (np.uint32(int(mul).bit_length() - 1), np.uint32(int(add) << 8), np.uint32(add),
            np.float32(s8 / 256.0), np.float32(s16))


def _splat(builder, x, ty, n):
    u = builder.insert_element(ir.Constant(ty, ir.Undefined), x, ir.Constant(_I32, 0))
    return builder.shuffle_vector(u, ir.Constant(ty, ir.Undefined), ir.Constant(ir.VectorType(_I32, n), [0] * n))


def _vc(x, n):
    return ir.Constant(ir.VectorType(_I32, n), [x] * n)


def _expand_decode(groups):
    """An intrinsic: `groups` (1 or 2) groups decoded into out[oa:oa + 8] (and
    out[ob:ob + 8]). Arguments: data, per group the byte offset of its fields and its E
    word, out, oa, ob, mshift, add8, add16, sc8, sc16."""
    lanes = 8 * groups

    @intrinsic
    def expand_decode(typingctx, data, pa, ea, pb, eb, out, oa, ob, mshift, add8, add16, sc8, sc16):
        def codegen(context, builder, sig, args):
            data, pa, ea, pb, eb, out, oa, ob, mshift, add8, add16, sc8, sc16 = args
            v32 = ir.VectorType(_I8, 32)
            m32 = ir.VectorType(ir.IntType(1), 32)
            vi = ir.VectorType(_I32, lanes)
            vf = ir.VectorType(ir.FloatType(), lanes)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(v32, [_I8.as_pointer(), m32, v32]),
                "llvm.masked.expandload.v32i8")
            zero = ir.Constant(v32, None)

            def load(p, e):
                return builder.call(fn, [_byte_ptr(context, builder, sig.args[0], data, p),
                                         builder.bitcast(builder.trunc(e, _I32), m32), zero])

            v = load(pa, ea)
            if groups == 2:
                v = builder.shuffle_vector(v, load(pb, eb), ir.Constant(ir.VectorType(_I32, 64), list(range(64))))
            v = builder.bitcast(v, vi)

            def lanemask(shift):
                k = builder.and_(builder.lshr(ea, ir.Constant(_I64, shift)), ir.Constant(_I64, 0xFF))
                if groups == 2:
                    kb = builder.and_(builder.lshr(eb, ir.Constant(_I64, shift)), ir.Constant(_I64, 0xFF))
                    k = builder.or_(k, builder.shl(kb, ir.Constant(_I64, 8)))
                return builder.bitcast(builder.trunc(k, ir.IntType(lanes)), ir.VectorType(ir.IntType(1), lanes))

            is1, is3, is0 = lanemask(32), lanemask(40), lanemask(48)
            q = builder.and_(v, _vc(0x7FFF, lanes))
            num = builder.add(builder.shl(q, _splat(builder, mshift, vi, lanes)),
                              builder.select(is1, _splat(builder, add8, vi, lanes), _splat(builder, add16, vi, lanes)))
            neg = builder.icmp_unsigned("!=", builder.and_(v, _vc(0x8000, lanes)), _vc(0, lanes))
            num = builder.select(neg, builder.sub(_vc(0, lanes), num), num)
            f = builder.fmul(builder.sitofp(num, vf),
                             builder.select(is1, _splat(builder, sc8, vf, lanes), _splat(builder, sc16, vf, lanes)))
            r = builder.select(is3, v, builder.select(is0, _vc(0, lanes), builder.bitcast(f, vi)))
            v8 = ir.VectorType(_I32, 8)
            for h, o in enumerate((oa, ob)[:groups]):
                part = r if groups == 1 else builder.shuffle_vector(r, r, ir.Constant(v8, list(range(8 * h, 8 * h + 8))))
                dst = _byte_ptr(context, builder, sig.args[5], out, builder.shl(o, ir.Constant(_I64, 2)))
                builder.store(part, builder.bitcast(dst, v8.as_pointer())).align = 4
            return context.get_dummy_value()
        return types.void(data, types.uint64, types.uint64, types.uint64, types.uint64, out, types.uint64,
                          types.uint64, types.uint32, types.uint32, types.uint32, types.float32,
                          types.float32), codegen
    return expand_decode


_expand_decode2 = _expand_decode(2)
_expand_decode1 = _expand_decode(1)
_U2, _U8, _SH = np.uint64(2), np.uint64(8), np.uint64(56)


_LANES_NZ = np.uint64(0xFFFFFFFF)    # E's expand mask: zero where all 8 tags are 0


@njit(cache=True, nogil=True, inline="always")
def _zero8(out, o):
    for i in range(8):
        out[o + np.uint64(i)] = 0


@njit(cache=True, nogil=True, inline="always")
def _step(data, p, j, tab):
    """Group at chain j's offset: (its fields' offset, its E word); moves the chain on."""
    q = p[j]
    tw = _load16(data, q)
    e = tab[0, tw & np.uint32(0xFF)] + tab[1, tw >> np.uint32(8)]
    p[j] = q + (e >> _SH)
    return q + _U2, e


@njit(cache=True, nogil=True)
def unpack_indexed(data, index, every, nsafe, out, tab, mshift, add8, add16, sc8, sc16):
    """Blocks 0 .. nsafe - 1 of `every` groups (index[b]: block b's byte offset, each at
    most data.size - every * MAX_GROUP - 2, which the caller checks) decoded into
    out[:8 every nsafe]; returns how many of them end where the next index entry (past
    the last entry: the data's end) says, nsafe when all do."""
    size = np.uint64(data.size)
    p = np.empty(CHAINS, np.uint64)
    step8 = np.uint64(8 * every)
    for c0 in range(0, nsafe, CHAINS):
        nb = min(CHAINS, nsafe - c0)
        for j in range(nb):
            p[j] = np.uint64(index[c0 + j])
        o = np.uint64(8 * c0 * every)
        if nb == CHAINS:
            for s in range(every):
                oa = o + np.uint64(8 * s)
                for j in range(0, CHAINS, 2):       # unrolled: the chains interleave
                    pa, ea = _step(data, p, j, tab)
                    pb, eb = _step(data, p, j + 1, tab)
                    if (ea | eb) & _LANES_NZ:
                        _expand_decode2(data, pa, ea, pb, eb, out, oa, oa + step8,
                                        mshift, add8, add16, sc8, sc16)
                    else:                           # two zero groups (runs of zeros)
                        _zero8(out, oa)
                        _zero8(out, oa + step8)
                    oa += step8 + step8
        else:
            for s in range(every):
                oa = o + np.uint64(8 * s)
                for j in range(0, nb - 1, 2):
                    pa, ea = _step(data, p, j, tab)
                    pb, eb = _step(data, p, j + 1, tab)
                    _expand_decode2(data, pa, ea, pb, eb, out, oa, oa + step8,
                                    mshift, add8, add16, sc8, sc16)
                    oa += step8 + step8
                if nb % 2:
                    pa, ea = _step(data, p, nb - 1, tab)
                    _expand_decode1(data, pa, ea, pa, ea, out, oa, oa, mshift, add8, add16, sc8, sc16)
        for j in range(nb):
            b = c0 + j
            want = np.uint64(index[b + 1]) if b + 1 < index.size else size
            if p[j] != want:
                return b
    return nsafe


@functools.lru_cache(maxsize=None)
def _consts(k, codec):
    decode_table(k, codec)      # checks codec and k
    return dec16_consts(*dec_consts(k, codec))


def fast_unpack_groups_indexed_into(buf, n, out, index, every, k=None, codec="paper",
                                    kernel=None) -> None:
    """The n values of exactly the groups in ``buf`` (a uint8 array) into out[:n] (uint32,
    as fast.fast_unpack_groups_into takes it: unpack_room(n) words, or exactly n where n
    is a multiple of 8), using ``index`` (the byte offsets of groups 0, every, 2 every,
    ..., as fast_pack_groups_into records them; int32 or int64). Bytes and index that are
    not the groups of n values (damaged bytes, a wrong index, a wrong count, bytes left
    over) are a ValueError; out's contents are then undefined. kernel: True / False
    forces the interleaved kernel / the checked walk and fast.py's unpack (default: the
    kernel where the CPU has vpexpandb)."""
    from . import fast

    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"value count must be an integer >= 0, got {n!r}")
    if isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 1:
        raise ValueError(f"every must be a positive group count, got {every!r}")
    n, every = int(n), int(every)
    mshift, add8, add16, sc8, sc16 = _consts(k, codec)
    if not isinstance(buf, np.ndarray) or buf.dtype != np.uint8 or buf.ndim != 1:
        raise ValueError("the groups must be a 1-D uint8 array")
    if not isinstance(index, np.ndarray) or index.dtype not in (np.int32, np.int64) or index.ndim != 1:
        raise ValueError("the index must be a 1-D int32 or int64 array")
    groups = -(-n // GROUP_VALUES)
    entries = -(-groups // every)
    data = np.ascontiguousarray(buf)
    size = data.size
    idx = np.ascontiguousarray(index, np.int64)

    def wrong():
        return ValueError(f"{size} bytes and an index of {index.size} entries are not the "
                          f"groups of {n} values (damaged bytes, a wrong index or a wrong count)")

    if idx.size != entries:
        raise ValueError(f"the index has {idx.size} entries, {entries} expected for {n} values")
    if n == 0:
        if size:
            raise wrong()
        return
    exact = n % GROUP_VALUES == 0 and isinstance(out, np.ndarray) and out.size == n
    fast._out_array(out, np.uint32, n if exact else fast.unpack_room(n), "out")
    if idx[0] != 0:
        raise wrong()
    use = HAS_EXPAND if kernel is None else bool(kernel)
    nfull = groups // every
    nsafe = 0
    if use and nfull:
        # blocks whose walk cannot leave the data, whatever its bytes say
        far = (idx[:nfull] < 0) | (idx[:nfull] > size - every * MAX_GROUP - 2)
        nsafe = int(np.argmax(far)) if far.any() else nfull
    if nsafe:
        t = group_tables
        if unpack_indexed(data, idx, every, nsafe, out, t, mshift, add8, add16, sc8, sc16) != nsafe:
            raise wrong()
        if nsafe == entries:
            return
    # the rest (or all, without the kernel): a checked walk, then fast.py's decoder
    lo = int(idx[nsafe])
    if not 0 <= lo <= size:
        raise wrong()
    a = nsafe * every * GROUP_VALUES
    part = data[lo:]
    starts, end = fast.group_offsets(part, n - a, every)
    if end != part.size or not np.array_equal(starts + lo, idx[nsafe:]):
        raise wrong()
    fast.fast_unpack_groups_into(part, n - a, out[a:], k, codec)
