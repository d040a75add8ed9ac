"""golden.fast's group-at-a-time kernels: the loops that run a group coder (AVX-512's
register compress, fast_blocks.compress_group8, to pack; AVX2's byte shuffles,
fast_shuffle.py; the portable pairs, fast_pairs.py) over a buffer, the same bytes and
values as fast_blocks.py's kernels.
  pack:   group after group at the running offset (the serial part: one add per group),
          the ring's index marks taken on the way. Where real gradients leave runs of
          groups in the 0-bit band (sampled per call: sparse), blocks of SKIP_GROUPS
          groups are checked at once and a zero one is written as its zero tag words by
          one store.
  unpack: the walk: a group's tag word, the next group's offset by popcounts of it (the
          critical chain), four zero tag words stepped with one load; each other group
          decoded off the chain by the coder.
Which coder a loop runs is told by the tables it is handed (a tuple of arrays): the
shuffle coder's three (pack: PACK_ROWS, LENGTHS, SPREAD) or two (unpack: UNPACK_ROWS,
LENGTHS), the pairs coder's two (pack: SPREAD, PAIR_OFFS) or one (unpack: PAIR_OFFS),
the compress coder's none (pack only: AVX-512 unpacks by its expanding load,
fast_blocks.unpack_expand).
numba compiles and caches one loop per kind of tuple, each with its coder inlined. Each kernel stops where a group and 8
bytes more might run past the data (unpack) or keeps within pack_room (pack); fast.py
goes on from there.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from llvmlite import ir

from . import fast_pairs, fast_shuffle
from .fast_blocks import _U2, _byte_ptr, compress_group8, _load8, _load16, _popcount, _splat8, _u64, _walk_bounds, _zero_steps, pack_pairs
from .fast_pairs import PAIR_OFFS, SPREAD
from .fast_shuffle import LENGTHS, PACK_ROWS, UNPACK_ROWS

__all__ = ["pack_compress", "pack_shuffle", "pack_vector", "pack_groups_with", "sparse", "unpack_shuffle",
           "unpack_shuffle_marked", "unpack_vector", "unpack_vector_marked",
           "SHUFFLE_PACK", "PAIRS_PACK", "COMPRESS_PACK", "SKIP_GROUPS", "SKIP_SAMPLE", "SKIP_SAMPLES", "SKIP_SHARE"]

# Zero blocks (pack_groups_with): SKIP_GROUPS groups checked at once; skipped where
# sampling (every SKIP_SAMPLE-th block, at most SKIP_SAMPLES) finds 1 block in SKIP_SHARE
# zero. Why sampled: the blocks' loop costs dense data 4-6% (docs/benchmarks.md), while a
# zero block takes about 40% of the time its groups take coded: break-even near 1 in 12.
SKIP_GROUPS, SKIP_SAMPLE, SKIP_SAMPLES, SKIP_SHARE = 4, 16, 64, 8
SHUFFLE_PACK, PAIRS_PACK = (PACK_ROWS, LENGTHS, SPREAD), (SPREAD, PAIR_OFFS)     # the pack loop's tables
COMPRESS_PACK = ()       # AVX-512's register compress needs no tables


def _coder(tables_type, pack):
    """The group coder whose tables these are: to pack, the shuffle one's three, the
    pairs one's two or the register compress's none (AVX-512); to unpack, the shuffle
    one's two or the pairs one's one."""
    n = len(tables_type)
    if pack and n in (0, 2, 3):
        return (compress_group8, None, fast_pairs.pack_group8, fast_shuffle.pack_group8)[n]
    if not pack and n in (1, 2):
        return fast_pairs.unpack_group8 if n == 1 else fast_shuffle.unpack_group8
    raise TypeError(f"no group coder takes {n} tables")


def _tables(builder, tables_type, tables):
    return list(zip(tables_type, cgutils.unpack_tuple(builder, tables, len(tables_type))))


def _code_groups(count):
    """An intrinsic coding the `count` groups of f[i0:i0 + 8 count] from out[pos] on, in
    registers, by the coder of `tables`; returns the next group's offset. Four groups in
    one body (a zero-skipping block) leave LLVM one straight run to schedule."""
    @intrinsic
    def groups(typingctx, f, i0, out, pos, tz, t16, s8, s16, tables):
        coder = _coder(tables, pack=True)

        def codegen(context, builder, sig, args):
            f_, i0_, out_, at, tz_, t16_, s8_, s16_, tab_ = args
            tabs = _tables(builder, sig.args[8], tab_)
            for j in range(count):
                at = coder(context, builder, (sig.args[0], f_), builder.add(i0_, ir.Constant(ir.IntType(64), 8 * j)),
                           (sig.args[2], out_), at, (tz_, t16_, s8_, s16_), tabs)
            return at
        return types.uint64(f, types.uint64, out, types.uint64, types.uint32, types.uint32,
                            types.float32, types.float32, tables), codegen
    return groups


_code_group8 = _code_groups(1)
_code_block = _code_groups(SKIP_GROUPS)


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
    """Whether the packers skip zero blocks in f (float32 bits, contiguous): at least
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
def pack_groups_with(f, t, mlim, w8, out, marks, every, g_base, pos_base, skip, tables):
    """pack_pairs' bytes and marks, each group coded in registers by the coder of
    `tables` (SHUFFLE_PACK, PAIRS_PACK); skip: whether blocks of SKIP_GROUPS groups wholly
    in the 0-bit band are found by one check and written as their zero tag words by one
    store (the others coded SKIP_GROUPS at a time), or every group is coded alone. Whole
    groups here, a last partial one through pack_pairs. out: pack_pairs' room (a group's
    stores end within 34 bytes of its start)."""
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
                pos = _code_group8(f, np.uint64(8 * g), out, pos, tz, t16, s8, s16, tables)
                g += 1
        elif _zero_block(f, np.uint64(8 * g), tz):
            _store_zero_words(out, pos)
            pos += np.uint64(2 * SKIP_GROUPS)
            g += SKIP_GROUPS
        else:
            pos = _code_block(f, np.uint64(8 * g), out, pos, tz, t16, s8, s16, tables)
            g += SKIP_GROUPS
    for h in range(g, full):
        if h == nxt:
            marks[(g_base + h) // every] = pos_base + pos
            nxt += every
        pos = _code_group8(f, np.uint64(8 * h), out, pos, tz, t16, s8, s16, tables)
    if 8 * full < n:
        pos += pack_pairs(f[8 * full:], t, mlim, w8, out[pos:], marks, every, g_base + full,
                          pos_base + pos)
    return pos


@njit(cache=True, nogil=True, inline="always")
def _pack(f, t, mlim, w8, out, marks, every, g_base, pos_base, tables):
    f = np.ascontiguousarray(f)
    return pack_groups_with(f, t, mlim, w8, out, marks, every, g_base, pos_base,
                            sparse(f.view(np.uint32), np.uint32(t << np.uint32(23))), tables)


@njit(cache=True, nogil=True)
def pack_compress(f, t, mlim, w8, out, marks, every, g_base, pos_base):
    """pack_pairs' bytes (and marks), each group coded in registers and stored by one
    register compress (AVX-512 VBMI2; elsewhere LLVM spells the compress and pext out,
    correct but slow); zero blocks skipped where `sparse` finds them worth it."""
    return _pack(f, t, mlim, w8, out, marks, every, g_base, pos_base, COMPRESS_PACK)


@njit(cache=True, nogil=True)
def pack_shuffle(f, t, mlim, w8, out, marks, every, g_base, pos_base):
    """pack_pairs' bytes (and marks), each group compacted by two pshufb (AVX2); zero
    blocks skipped where `sparse` finds them worth it."""
    return _pack(f, t, mlim, w8, out, marks, every, g_base, pos_base, SHUFFLE_PACK)


@njit(cache=True, nogil=True)
def pack_vector(f, t, mlim, w8, out, marks, every, g_base, pos_base):
    """pack_pairs' bytes (and marks), each group coded in registers and stored as 4 pairs
    (portable); zero blocks skipped where `sparse` finds them worth it."""
    return _pack(f, t, mlim, w8, out, marks, every, g_base, pos_base, PAIRS_PACK)


@intrinsic
def _decode_group(typingctx, src, pos, tw, dst, dpos, msh, add, s8, s16, tables):
    """One group's fields (from src[pos] on, tag word tw) decoded by the coder of
    `tables` and stored as 8 uint32 at dst[dpos]."""
    coder = _coder(tables, pack=False)

    def codegen(context, builder, sig, args):
        src_, pos_, tw_, dst_, dpos_, msh_, add_, s8_, s16_, tab_ = args
        coder(context, builder, (sig.args[0], src_), pos_, tw_, (sig.args[3], dst_), dpos_,
              (msh_, add_, s8_, s16_), _tables(builder, sig.args[9], tab_))
        return context.get_dummy_value()
    return types.void(src, types.uint64, types.uint32, dst, types.uint64, types.uint32,
                      types.uint32, types.float32, types.float32, tables), codegen


@njit(cache=True, nogil=True, inline="always")
def _walk_to(data, pos, g, gend, end, out, msh, add, s8, s16, tables):
    """Groups g.. from pos on, up to group gend and offset end: zero runs stepped, every
    other group decoded; returns (g, pos) after them."""
    while g < gend and pos <= end:
        g, pos = _zero_steps(data, pos, g, gend, end, out)
        if g >= gend or pos > end:
            break
        tw = _load16(data, pos)
        _decode_group(data, pos + _U2, tw, out, np.uint64(8 * g), msh, add, s8, s16, tables)
        # widths 0, 1, 2, 4 summed by popcounts (tags, high bits again, tag 3 once more),
        # not looked up, the tag-3 term two steps deep: the walk's chain (this group's
        # length gives the next one's offset) is a load and a step shorter, 20% faster
        t = _u64(tw)
        hi = t & _u64(0xAAAA)
        pos += (_U2 + _popcount(hi & (t << _u64(1)))) + (_popcount(t) + _popcount(hi))
        g += 1
    return g, pos


@njit(cache=True, nogil=True, inline="always")
def _unpack(data, groups, out, mul, add, s8, s16, tables):
    data, msh, end, ok = _walk_bounds(data, mul)
    if not ok:
        return 0, np.uint64(0)
    return _walk_to(data, np.uint64(0), 0, groups, end, out, msh, add, s8, s16, tables)


@njit(cache=True, nogil=True, inline="always")
def _unpack_marked(data, groups, out, mul, add, s8, s16, marks, every, tables):
    data, msh, end, ok = _walk_bounds(data, mul)
    g, pos = 0, np.uint64(0)
    if not ok:
        return g, pos
    while g < groups and pos <= end:
        marks[g // every] = pos
        g, pos = _walk_to(data, pos, g, min(g + every, groups), end, out, msh, add, s8, s16, tables)
    return g, pos


@njit(cache=True, nogil=True)
def unpack_shuffle(data, groups, out, mul, add, s8, s16):
    """fast_blocks.unpack_expand's results, each group spread by two pshufb (AVX2):
    groups from the start of data into out while the group and 8 bytes more surely lie
    inside data; returns (groups decoded, their byte length)."""
    return _unpack(data, groups, out, mul, add, s8, s16, (UNPACK_ROWS, LENGTHS))


@njit(cache=True, nogil=True)
def unpack_shuffle_marked(data, groups, out, mul, add, s8, s16, marks, every):
    """unpack_shuffle, also writing marks[j] = the byte offset of group j * every (as
    fast_blocks.unpack_marked does)."""
    return _unpack_marked(data, groups, out, mul, add, s8, s16, marks, every, (UNPACK_ROWS, LENGTHS))


@njit(cache=True, nogil=True)
def unpack_vector(data, groups, out, mul, add, s8, s16):
    """unpack_shuffle's results, each group's 4 pairs loaded and split (portable)."""
    return _unpack(data, groups, out, mul, add, s8, s16, (PAIR_OFFS,))


@njit(cache=True, nogil=True)
def unpack_vector_marked(data, groups, out, mul, add, s8, s16, marks, every):
    """unpack_vector, also writing the marks as unpack_shuffle_marked does."""
    return _unpack_marked(data, groups, out, mul, add, s8, s16, marks, every, (PAIR_OFFS,))
