"""golden.fast's portable group coders: one group packed or unpacked in registers, the
same bytes and values as fast_blocks.py's kernels, in LLVM IR with no target intrinsic
(vectors, shuffles by constant masks, compares, popcounts), so that LLVM lowers it to
whatever vector unit the CPU has: NEON on AArch64, SSE2 or AVX2 on x86-64. fast_groups.py
runs them over a buffer (kernel "portable").

Why: the loops of fast_blocks.pack_pairs, which LLVM vectorises per pass over a block,
spend 11 ns a group on this project's AVX2 hosts (29% of a same-core copy on 64 MiB, 13%
on the 9 MiB capture; docs/benchmarks.md): its passes meet in memory (a block's fields,
widths, pairs and tag words stored and loaded again). Coded a group at a time in
registers the pack takes 5.4 ns, the unpack 6.2 (10 with one load per field and a
decoding pass per block, the unpacker before).
  pack:   the group's fields and tags as fast_blocks._code8 gives them (8 lanes); its
          tag word from two movemasks (the tags' low and high bits) spread into alternate
          bits by SPREAD; the fields joined in pairs, each pair a 64-bit lane (even |
          odd << 8 x the even one's width); the tag word and the 4 pairs stored, each
          pair 8 bytes (the bytes past its width are scratch, overwritten by the next),
          at offsets looked up by the tag word's bytes in PAIR_OFFS. The lanes' widths
          summed in turn (four adds deep from one group's offset to the next) took 6.4
          ns; two 128-bit stores of two pairs each 7.5.
  unpack: the 4 pairs loaded as 8 bytes each from their offsets in the group (PAIR_OFFS:
          per tag byte, its first pair's width and the 4 fields' width), split into
          fields by one vector shift (the bytes past a field's width are ignored:
          fast_blocks._decode8 masks them) and decoded as _decode8 decodes a lane.
A little-endian host is assumed, as in fast.py.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from .fast_blocks import _byte_ptr, _code8, _decode8, _load8, _tags8

__all__ = ["SPREAD", "PAIR_OFFS", "tag_word", "pack_group8", "unpack_group8"]

_WIDTH = (0, 1, 2, 4)       # a field's bytes per tag
# Per byte: its 8 bits moved to the even bits of 16 (bit i to bit 2i).
SPREAD = np.array([sum(((b >> i) & 1) << (2 * i) for i in range(8)) for b in range(256)], np.uint16)
# Per tag byte (4 fields' tags): the width of its first pair | the 4 fields' width << 8.
PAIR_OFFS = np.array([_WIDTH[b & 3] + _WIDTH[(b >> 2) & 3]
                      | sum(_WIDTH[(b >> (2 * j)) & 3] for j in range(4)) << 8
                      for b in range(256)], np.uint16)

_i16, _i32, _i64 = ir.IntType(16), ir.IntType(32), ir.IntType(64)
_v4i64, _v8 = ir.VectorType(_i64, 4), ir.VectorType(_i32, 8)


def _const(ty, x):
    return ir.Constant(ty, x if isinstance(x, list) else [x] * ty.count)


def tag_word(context, builder, arrty, spread, bits):
    """The tag word (i32) of 8 lanes whose tags' low and high bits are bits (two <8 x
    i1>, _code8's): each bit's 8 lanes by one movemask (a <8 x i1> as i8), spread into
    alternate bits by one lookup in `spread` (SPREAD)."""
    word = ir.Constant(_i32, 0)
    for at_bit, m in enumerate(bits):
        at = builder.shl(builder.zext(builder.bitcast(m, ir.IntType(8)), _i64), ir.Constant(_i64, 1))
        s = builder.load(builder.bitcast(_byte_ptr(context, builder, arrty, spread, at), _i16.as_pointer()))
        s.align = 2
        word = builder.or_(word, builder.shl(builder.zext(s, _i32), ir.Constant(_i32, at_bit)))
    return word


def pack_group8(context, builder, src, i0, dst, pos, consts, tables):
    """The IR of one group, the 8 values from f[i0] on, coded at out[pos]; returns the
    next group's offset (i64). src, dst: (numba type, value) of f and out; consts: (tz,
    t16, s8, s16) as _code8 takes them; tables: [(type, value)] of SPREAD and PAIR_OFFS.
    The pairs' offsets come from the tag word by PAIR_OFFS, not from the lanes' widths:
    the next group's offset is then one add from this one's (the widths' adds, four
    deep, set the pace)."""
    (fty, f), (outty, out) = src, dst
    (spty, spread), (oty, offs) = tables
    fld, t, raw, bits = _code8(builder, _load8(context, builder, fty, f, i0), *consts)
    w = builder.select(raw, _const(_v8, 4), t)          # a field's bytes: 0, 1, 2, 4
    tw = tag_word(context, builder, spty, spread, bits)
    # lane j of the <4 x i64> view of 8 lanes holds lanes 2j (low half) and 2j + 1
    pairs, low = builder.bitcast(fld, _v4i64), _const(_v4i64, 0xFFFFFFFF)
    shift = builder.shl(builder.and_(builder.bitcast(w, _v4i64), low), _const(_v4i64, 3))
    pword = builder.or_(builder.and_(pairs, low),
                        builder.shl(builder.lshr(pairs, _const(_v4i64, 32)), shift))
    offsets, width = _pair_offsets(context, builder, oty, offs, tw)

    def at(p, ty):
        return builder.bitcast(_byte_ptr(context, builder, outty, out, p), ty.as_pointer())

    builder.store(builder.trunc(tw, _i16), at(pos, _i16)).align = 1
    a = builder.add(pos, ir.Constant(_i64, 2))
    for j, off in enumerate(offsets):
        builder.store(builder.extract_element(pword, ir.Constant(_i32, j)), at(builder.add(a, off), _i64)).align = 1
    return builder.add(a, width)


def _pair_offsets(context, builder, oty, offs, tw):
    """(the 4 pairs' byte offsets in the group's fields, the fields' byte width), i64
    each, from PAIR_OFFS of the tag word tw's two bytes."""
    def entry(b):
        x = builder.load(builder.bitcast(_byte_ptr(context, builder, oty, offs, builder.shl(b, ir.Constant(_i64, 1))),
                                         _i16.as_pointer()))
        x.align = 2
        return builder.zext(x, _i64)
    lo = entry(builder.zext(builder.and_(tw, ir.Constant(_i32, 0xFF)), _i64))
    hi = entry(builder.zext(builder.lshr(tw, ir.Constant(_i32, 8)), _i64))
    m8, s8b = ir.Constant(_i64, 0xFF), ir.Constant(_i64, 8)
    half = builder.lshr(lo, s8b)
    return ((ir.Constant(_i64, 0), builder.and_(lo, m8), half, builder.add(half, builder.and_(hi, m8))),
            builder.add(half, builder.lshr(hi, s8b)))


def unpack_group8(context, builder, src, pos, tw, dst, dpos, consts, tables):
    """The IR of one group's fields (from data[pos] on, tag word tw: i32) decoded and
    stored as 8 uint32 at out[dpos]: its 4 pairs loaded as 8 bytes each (reads up to
    byte pos + 32), split by one shift, decoded by _decode8. src, dst: (numba type,
    value) of data and out; consts: (msh, add, s8, s16) as _decode8 takes them; tables:
    [(type, value) of PAIR_OFFS]."""
    (dty, data), (outty, out) = src, dst
    (oty, offs), = tables

    offsets, _ = _pair_offsets(context, builder, oty, offs, tw)
    pairs = ir.Constant(_v4i64, ir.Undefined)
    for j, off in enumerate(offsets):
        x = builder.load(builder.bitcast(_byte_ptr(context, builder, dty, data, builder.add(pos, off)),
                                         _i64.as_pointer()))
        x.align = 1
        pairs = builder.insert_element(pairs, x, ir.Constant(_i32, j))
    # the lanes' tags -> widths 0, 1, 2, 4; the even lanes' (the low halves of the <4 x
    # i64> view) in bits: the shift that brings a pair's odd field down
    t = _tags8(builder, tw)
    w = builder.add(t, builder.and_(builder.and_(builder.lshr(t, _const(_v8, 1)), t), _const(_v8, 1)))
    low = _const(_v4i64, 0xFFFFFFFF)
    sh = builder.shl(builder.and_(builder.bitcast(w, _v4i64), low), _const(_v4i64, 3))
    # each pair as its two fields, the even one in the low half (the odd one's bytes
    # above its width: ignored), the odd one shifted down into the high half
    v = builder.bitcast(builder.or_(builder.and_(pairs, low),
                                    builder.shl(builder.lshr(pairs, sh), _const(_v4i64, 32))), _v8)
    res = _decode8(builder, v, tw, *consts, t=t)
    d = _byte_ptr(context, builder, outty, out, builder.shl(dpos, ir.Constant(_i64, 2)))
    builder.store(res, builder.bitcast(d, _v8.as_pointer())).align = 4
