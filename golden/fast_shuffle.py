"""golden.fast's byte-shuffle kernels: the group packer and unpacker of fast_blocks.py
for CPUs without AVX-512 VBMI2 (no vpcompressb / vpexpandb), the same bytes.

Why: on such CPUs (AMD Zen 2 and 3, many Xeons) fast_blocks' portable kernels pack and
unpack at about a quarter of a same-core copy (docs/benchmarks.md). A byte shuffle
(SSSE3's pshufb, on every x86-64 CPU with AVX2) moves the bytes of 16 as a table of
indices says, so a group's 8 fields are compacted or expanded as two halves of 4, each
half's 4 tags (one byte of the tag word) picking one of 256 precomputed index rows:
  pack:   each group coded in registers as fast_blocks._code8 codes it; its tag word
          from two movemasks (the tags' low and high bits) spread into alternate bits
          by a table, SPREAD (no pext: microcoded, slow, on Zen 2; the table takes
          two loads where shifts and masks took twelve instructions); each half's fields compacted by one
          pshufb with the row PACK_ROWS[its tag byte] and stored as 16 bytes, the second
          half LENGTHS[first byte] after the first (the bytes past the kept ones are
          scratch, overwritten by the next group). The serial part is one add per group.
          Where real gradients leave runs of groups in the 0-bit band (sampled per call),
          blocks of 4 groups are checked at once and a zero one is written as its 4 zero
          tag words by one store.
  unpack: the walk of fast_blocks (the tag word, the next group's offset by popcounts,
          four zero tag words stepped with one load) and, off its chain, each half's fields loaded as
          16 bytes and spread into 4 32-bit lanes by one pshufb with the row
          UNPACK_ROWS[its tag byte] (a byte past a field's width: index 0x80, zero),
          decoded in registers by fast_blocks._decode8 and stored.
An index row's entry >= 0x80 gives a zero byte; pshufb reads index bits 0..3 only.
x86 only (llvm.x86.ssse3.pshuf.b.128): fast_kernels.py picks these where the CPU has
AVX2 and the portable kernels elsewhere. Each kernel stops where a group and 8 bytes
more might run past the data (unpack) or keeps within pack_room (pack); fast.py goes on
from there. A little-endian host is assumed.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from llvmlite import ir

from .fast_blocks import (_U2, _byte_ptr, _code8, _decode8, _load16, _load8, _load_vec, _popcount,
                          _splat8, _u64, _walk_bounds, _zero_steps, pack_pairs)

__all__ = ["pack_shuffle", "pack_shuffle_with", "sparse", "unpack_shuffle", "unpack_shuffle_marked",
           "PACK_ROWS", "UNPACK_ROWS", "LENGTHS"]

_WIDTH = (0, 1, 2, 4)       # a field's bytes per tag


def _rows():
    """(PACK_ROWS, UNPACK_ROWS, LENGTHS): per tag byte b (the tags of 4 lanes, lane j's
    in bits 2j..2j+1), the pshufb indices that move the lanes' kept bytes (lane j's
    bytes at 4j..4j+3) to the front, those that move them back, and their count."""
    pack = np.full((256, 16), 0x80, np.uint8)
    unpack = np.full((256, 16), 0x80, np.uint8)
    lengths = np.zeros(256, np.uint8)
    for b in range(256):
        at = 0
        for j in range(4):
            for i in range(_WIDTH[(b >> (2 * j)) & 3]):
                pack[b, at] = 4 * j + i
                unpack[b, 4 * j + i] = at
                at += 1
        lengths[b] = at
    return pack.ravel(), unpack.ravel(), lengths


PACK_ROWS, UNPACK_ROWS, LENGTHS = _rows()
# Zero blocks (pack_shuffle_with): SKIP_GROUPS groups checked at once; skipped where
# sampling (every SKIP_SAMPLE-th block, at most SKIP_SAMPLES) finds 1 block in SKIP_SHARE
# zero. Why sampled: the blocks' loop costs dense data 4-6% (docs/benchmarks.md), while a
# zero block takes about 40% of the time its groups take coded: break-even near 1 in 12.
SKIP_GROUPS, SKIP_SAMPLE, SKIP_SAMPLES, SKIP_SHARE = 4, 16, 64, 8
# Per byte: its 8 bits moved to the even bits of 16 (bit i to bit 2i).
SPREAD = np.array([sum(((b >> i) & 1) << (2 * i) for i in range(8)) for b in range(256)], np.uint16)


def _pshufb(builder, v, idx):
    """pshufb of two <16 x i8>: byte i = v[idx[i] & 15], or 0 where idx[i] >= 0x80."""
    v16 = ir.VectorType(ir.IntType(8), 16)
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(v16, [v16, v16]),
                                        "llvm.x86.ssse3.pshuf.b.128")
    return builder.call(fn, [v, idx])


def _row(context, builder, arrty, rows, b):
    """Row b (i64) of a flat uint8 table of 16-byte rows, as <16 x i8>."""
    return _load_vec(context, builder, arrty, rows, builder.shl(b, ir.Constant(ir.IntType(64), 4)),
                     ir.VectorType(ir.IntType(8), 16))


def _tag_word(context, builder, arrty, spread, t):
    """The tag word (i32) of the 8 lanes' tags t: each tag bit's 8 lanes by one movemask,
    spread into alternate bits by one lookup in `spread` (SPREAD)."""
    v8 = ir.VectorType(ir.IntType(32), 8)
    i32, i64 = ir.IntType(32), ir.IntType(64)
    word = ir.Constant(i32, 0)
    for bit in (0, 1):
        m = builder.icmp_unsigned("!=", builder.and_(t, ir.Constant(v8, [1 << bit] * 8)),
                                  ir.Constant(v8, [0] * 8))
        at = builder.shl(builder.zext(builder.bitcast(m, ir.IntType(8)), i64), ir.Constant(i64, 1))
        s = builder.load(builder.bitcast(_byte_ptr(context, builder, arrty, spread, at),
                                         ir.IntType(16).as_pointer()))
        s.align = 2
        word = builder.or_(word, builder.shl(builder.zext(s, i32), ir.Constant(i32, bit)))
    return word


def _group8_ir(context, builder, sig, args, i0, pos):
    """The IR of one group (the 8 values from f[i0] on) coded at out[pos], as
    _shuffle_groups describes; returns the next group's offset (i64)."""
    f_, _, out_, _, tz_, t16_, s8_, s16_, rows_, len_, spread_ = args
    i8, i16, i32, i64 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
    v16 = ir.VectorType(i8, 16)
    fld, t, _ = _code8(builder, _load8(context, builder, sig.args[0], f_, i0), tz_, t16_, s8_, s16_)
    tw = _tag_word(context, builder, sig.args[10], spread_, t)
    b0 = builder.zext(builder.and_(tw, ir.Constant(i32, 0xFF)), i64)
    b1 = builder.zext(builder.lshr(tw, ir.Constant(i32, 8)), i64)
    by = builder.bitcast(fld, ir.VectorType(i8, 32))
    halves = [builder.shuffle_vector(by, ir.Constant(by.type, ir.Undefined),
                                     ir.Constant(ir.VectorType(i32, 16), list(range(16 * h, 16 * h + 16))))
              for h in (0, 1)]
    p0 = _pshufb(builder, halves[0], _row(context, builder, sig.args[8], rows_, b0))
    p1 = _pshufb(builder, halves[1], _row(context, builder, sig.args[8], rows_, b1))

    def length(b):
        return builder.zext(builder.load(_byte_ptr(context, builder, sig.args[9], len_, b)), i64)

    def at(p):
        return _byte_ptr(context, builder, sig.args[2], out_, p)

    builder.store(builder.trunc(tw, i16), builder.bitcast(at(pos), i16.as_pointer())).align = 1
    a0 = builder.add(pos, ir.Constant(i64, 2))
    builder.store(p0, builder.bitcast(at(a0), v16.as_pointer())).align = 1
    a1 = builder.add(a0, length(b0))
    builder.store(p1, builder.bitcast(at(a1), v16.as_pointer())).align = 1
    return builder.add(a1, length(b1))


def _shuffle_groups(count):
    """An intrinsic coding the `count` groups of f[i0:i0 + 8 count] from out[pos] on, in
    registers: each group's fields and tags as _code8 gives them, its tag word from two
    movemasks, each half's kept bytes moved to the front by one pshufb (rows: PACK_ROWS)
    and stored as 16 bytes, the second half where the first's kept bytes end (lengths:
    LENGTHS). Returns the next group's offset. Four groups in one body (a zero-skipping
    block) leave LLVM one straight run to schedule."""
    @intrinsic
    def groups(typingctx, f, i0, out, pos, tz, t16, s8, s16, rows, lengths, spread):
        def codegen(context, builder, sig, args):
            at = args[3]
            for j in range(count):
                at = _group8_ir(context, builder, sig, args,
                                builder.add(args[1], ir.Constant(ir.IntType(64), 8 * j)), at)
            return at
        return types.uint64(f, types.uint64, out, types.uint64, types.uint32, types.uint32,
                            types.float32, types.float32, rows, lengths, spread), codegen
    return groups


_shuffle_group8 = _shuffle_groups(1)
_shuffle_block = _shuffle_groups(SKIP_GROUPS)


@intrinsic
def _zero_block(typingctx, f, i0, tz):
    """Whether the SKIP_GROUPS groups of f[i0:] all lie in the 0-bit band (|x|'s bits <
    tz): one signed max over the lanes' |x| bits, one compare, one movemask."""
    def codegen(context, builder, sig, args):
        f_, i0_, tz_ = args
        i64, v8 = ir.IntType(64), ir.VectorType(ir.IntType(32), 8)
        most = None
        for j in range(SKIP_GROUPS):
            x = builder.and_(_load8(context, builder, sig.args[0], f_, builder.add(i0_, ir.Constant(i64, 8 * j))),
                             ir.Constant(v8, [0x7FFFFFFF] * 8))
            most = x if most is None else builder.select(builder.icmp_signed(">", most, x), most, x)
        below = builder.icmp_signed("<", most, _splat8(builder, tz_))
        return builder.icmp_unsigned("==", builder.bitcast(below, ir.IntType(8)), ir.Constant(ir.IntType(8), 0xFF))
    return types.boolean(f, types.uint64, types.uint32), codegen


@intrinsic
def _store_zero_words(typingctx, out, pos):
    """SKIP_GROUPS zero tag words (8 zero bytes) at out[pos]: one store."""
    def codegen(context, builder, sig, args):
        p = _byte_ptr(context, builder, sig.args[0], args[0], args[1])
        builder.store(ir.Constant(ir.IntType(64), 0), builder.bitcast(p, ir.IntType(64).as_pointer())).align = 1
        return context.get_dummy_value()
    return types.void(out, types.uint64), codegen


@njit(cache=True, nogil=True)
def sparse(f, tz):
    """Whether pack_shuffle skips zero blocks in f (float32 bits, contiguous): at least
    1/SKIP_SHARE of the blocks of SKIP_GROUPS groups it samples (every SKIP_SAMPLE-th
    block, at most SKIP_SAMPLES of them, spread evenly) lie wholly in the 0-bit band
    (|x|'s bits < tz)."""
    blocks = f.size // (8 * SKIP_GROUPS)
    step = max(SKIP_SAMPLE, blocks // SKIP_SAMPLES)
    seen, hit = 0, 0
    for b in range(0, blocks, step):
        seen += 1
        hit += _zero_block(f, np.uint64(8 * SKIP_GROUPS * b), tz)
    return hit > 0 and SKIP_SHARE * hit >= seen


@njit(cache=True, nogil=True)
def pack_shuffle_with(f, t, mlim, w8, out, marks, every, g_base, pos_base, skip):
    """pack_shuffle's bytes and marks; skip: whether blocks of SKIP_GROUPS groups wholly
    in the 0-bit band are found by one check and written as their zero tag words by one
    store (the others coded SKIP_GROUPS at a time), or every group is coded alone."""
    f = np.ascontiguousarray(f)      # the groups are loaded by address: a view is copied
    n = f.size
    tz, t16 = np.uint32(t << np.uint32(23)), np.uint32(mlim << np.uint32(23))
    s8, s16 = np.float32(2.0) ** np.float32(w8), np.float32(32768.0)
    full = n // 8
    nxt = (every - g_base % every) % every if every > 0 else full    # the next group to mark
    pos = np.uint64(0)
    g = 0
    while skip and g + SKIP_GROUPS <= full:
        if nxt < g + SKIP_GROUPS:       # a block holding a mark: group by group
            for _ in range(SKIP_GROUPS):
                if g == nxt:
                    marks[(g_base + g) // every] = pos_base + pos
                    nxt += every
                pos = _shuffle_group8(f, np.uint64(8 * g), out, pos, tz, t16, s8, s16, PACK_ROWS,
                                      LENGTHS, SPREAD)
                g += 1
        elif _zero_block(f, np.uint64(8 * g), tz):
            _store_zero_words(out, pos)
            pos += np.uint64(2 * SKIP_GROUPS)
            g += SKIP_GROUPS
        else:
            pos = _shuffle_block(f, np.uint64(8 * g), out, pos, tz, t16, s8, s16, PACK_ROWS, LENGTHS,
                                 SPREAD)
            g += SKIP_GROUPS
    for h in range(g, full):
        if h == nxt:
            marks[(g_base + h) // every] = pos_base + pos
            nxt += every
        pos = _shuffle_group8(f, np.uint64(8 * h), out, pos, tz, t16, s8, s16, PACK_ROWS, LENGTHS,
                              SPREAD)
    if 8 * full < n:
        pos += pack_pairs(f[8 * full:], t, mlim, w8, out[pos:], marks, every, g_base + full,
                          pos_base + pos)
    return pos


@njit(cache=True, nogil=True)
def pack_shuffle(f, t, mlim, w8, out, marks, every, g_base, pos_base):
    """pack_pairs' bytes (and marks), each group coded in registers and compacted by two
    pshufb; zero blocks skipped where `sparse` finds them worth it. Whole groups here, a
    last partial one through pack_pairs. out: pack_pairs' room (a group's second 16-byte
    store ends within 34 bytes of the group's start)."""
    f = np.ascontiguousarray(f)
    return pack_shuffle_with(f, t, mlim, w8, out, marks, every, g_base, pos_base,
                             sparse(f.view(np.uint32), np.uint32(t << np.uint32(23))))


@intrinsic
def _shuffle_decode8(typingctx, src, pos, tw, dst, dpos, msh, add, s8, s16, rows, lengths):
    """One group's fields (from src[pos] on, tag word tw) spread into 8 32-bit lanes by
    two pshufb (rows: UNPACK_ROWS; the second half's fields start LENGTHS[first byte]
    after the first's), decoded by _decode8 and stored as 8 uint32 at dst[dpos]. Reads
    the 16 bytes at pos and the 16 at the second half's start."""
    def codegen(context, builder, sig, args):
        src_, pos_, tw_, dst_, dpos_, msh_, add_, s8_, s16_, rows_, len_ = args
        i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
        v16, v8 = ir.VectorType(i8, 16), ir.VectorType(i32, 8)
        b0 = builder.zext(builder.and_(tw_, ir.Constant(i32, 0xFF)), i64)
        b1 = builder.zext(builder.lshr(tw_, ir.Constant(i32, 8)), i64)

        def fields(p, b):
            return _pshufb(builder, _load_vec(context, builder, sig.args[0], src_, p, v16),
                           _row(context, builder, sig.args[9], rows_, b))

        len0 = builder.zext(builder.load(_byte_ptr(context, builder, sig.args[10], len_, b0)), i64)
        lo, hi = fields(pos_, b0), fields(builder.add(pos_, len0), b1)
        v = builder.bitcast(builder.shuffle_vector(lo, hi, ir.Constant(ir.VectorType(i32, 32),
                                                                       list(range(32)))), v8)
        res = _decode8(builder, v, tw_, msh_, add_, s8_, s16_)
        d = _byte_ptr(context, builder, sig.args[3], dst_, builder.shl(dpos_, ir.Constant(i64, 2)))
        builder.store(res, builder.bitcast(d, v8.as_pointer())).align = 4
        return context.get_dummy_value()
    return types.void(src, types.uint64, types.uint32, dst, types.uint64, types.uint32,
                      types.uint32, types.float32, types.float32, rows, lengths), codegen


@njit(cache=True, nogil=True, inline="always")
def _walk_to(data, pos, g, gend, end, out, msh, add, s8, s16):
    """Groups g.. from pos on, up to group gend and offset end: zero runs stepped, every
    other group spread and decoded; returns (g, pos) after them."""
    while g < gend and pos <= end:
        g, pos = _zero_steps(data, pos, g, gend, end, out)
        if g >= gend or pos > end:
            break
        tw = _load16(data, pos)
        _shuffle_decode8(data, pos + _U2, tw, out, np.uint64(8 * g), msh, add, s8, s16,
                         UNPACK_ROWS, LENGTHS)
        # widths 0, 1, 2, 4 summed by popcounts (tags, high bits again, tag 3 once more),
        # not looked up, the tag-3 term two steps deep: the walk's chain (this group's
        # length gives the next one's offset) is a load and a step shorter, 20% faster
        t = _u64(tw)
        hi = t & _u64(0xAAAA)
        pos += (_U2 + _popcount(hi & (t << _u64(1)))) + (_popcount(t) + _popcount(hi))
        g += 1
    return g, pos


@njit(cache=True, nogil=True)
def unpack_shuffle(data, groups, out, mul, add, s8, s16):
    """fast_blocks.unpack_expand's results, each group spread by two pshufb: groups from
    the start of data into out while the group and 8 bytes more surely lie inside data;
    returns (groups decoded, their byte length)."""
    data, msh, end, ok = _walk_bounds(data, mul)
    if not ok:
        return 0, np.uint64(0)
    return _walk_to(data, np.uint64(0), 0, groups, end, out, msh, add, s8, s16)


@njit(cache=True, nogil=True)
def unpack_shuffle_marked(data, groups, out, mul, add, s8, s16, marks, every):
    """unpack_shuffle, also writing marks[j] = the byte offset of group j * every (as
    fast_blocks.unpack_marked does)."""
    data, msh, end, ok = _walk_bounds(data, mul)
    g, pos = 0, np.uint64(0)
    if not ok:
        return g, pos
    while g < groups and pos <= end:
        marks[g // every] = pos
        g, pos = _walk_to(data, pos, g, min(g + every, groups), end, out, msh, add, s8, s16)
    return g, pos


