"""golden.fast's byte-shuffle group coders: one group packed or unpacked in registers,
as fast_blocks.py's kernels code it, for x86 CPUs with AVX2 but no AVX-512 VBMI2 (no
vpcompressb / vpexpandb), the same bytes; fast_groups.py runs them over a buffer
(kernel "avx2").

Why: on such CPUs (AMD Zen 2 and 3, many Xeons) fast_blocks' portable kernels pack and
unpack at about a quarter of a same-core copy (docs/benchmarks.md). A byte shuffle
(SSSE3's pshufb, on every x86-64 CPU with AVX2) moves the bytes of 16 as a table of
indices says, so a group's 8 fields are compacted or expanded as two halves of 4, each
half's 4 tags (one byte of the tag word) picking one of 256 precomputed index rows:
  pack:   each group coded in registers as fast_blocks._code8 codes it; its tag word
          from two movemasks spread into alternate bits by a table (fast_pairs.tag_word;
          no pext: microcoded, slow, on Zen 2; the table takes two loads where shifts
          and masks took twelve instructions); each half's fields compacted by one
          pshufb with the row PACK_ROWS[its tag byte] and stored as 16 bytes, the second
          half LENGTHS[first byte] after the first (the bytes past the kept ones are
          scratch, overwritten by the next group). The serial part is one add per group.
  unpack: off the walk's chain (fast_groups.py), each half's fields loaded as
          16 bytes and spread into 4 32-bit lanes by one pshufb with the row
          UNPACK_ROWS[its tag byte] (a byte past a field's width: index 0x80, zero),
          decoded in registers by fast_blocks._decode8 and stored.
An index row's entry >= 0x80 gives a zero byte; pshufb reads index bits 0..3 only.
x86 only (llvm.x86.ssse3.pshuf.b.128): fast_kernels.py picks these where the CPU has
AVX2 and the portable coders (fast_pairs.py) elsewhere. A little-endian host is assumed.
"""

from __future__ import annotations

import numpy as np
from numba.core import cgutils
from llvmlite import ir

from .fast_blocks import _byte_ptr, _code8, _decode8, _load8, _load_vec
from .fast_pairs import tag_word

__all__ = ["PACK_ROWS", "UNPACK_ROWS", "LENGTHS", "pack_group8", "unpack_group8"]

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


def pack_group8(context, builder, src, i0, dst, pos, consts, tables):
    """The IR of one group, the 8 values from f[i0] on, coded at out[pos]; returns the
    next group's offset (i64). src, dst: (numba type, value) of f and out; consts: (tz,
    t16, s8, s16) as _code8 takes them; tables: [(type, value)] of PACK_ROWS, LENGTHS,
    SPREAD (fast_pairs)."""
    (fty, f), (outty, out) = src, dst
    (rty, rows), (lty, lengths), (spty, spread) = tables
    i8, i16, i32, i64 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
    v16 = ir.VectorType(i8, 16)
    fld, _, _, bits = _code8(builder, _load8(context, builder, fty, f, i0), *consts)
    tw = tag_word(context, builder, spty, spread, bits)
    b0 = builder.zext(builder.and_(tw, ir.Constant(i32, 0xFF)), i64)
    b1 = builder.zext(builder.lshr(tw, ir.Constant(i32, 8)), i64)
    by = builder.bitcast(fld, ir.VectorType(i8, 32))
    halves = [builder.shuffle_vector(by, ir.Constant(by.type, ir.Undefined),
                                     ir.Constant(ir.VectorType(i32, 16), list(range(16 * h, 16 * h + 16))))
              for h in (0, 1)]
    p0 = _pshufb(builder, halves[0], _row(context, builder, rty, rows, b0))
    p1 = _pshufb(builder, halves[1], _row(context, builder, rty, rows, b1))

    def length(b):
        return builder.zext(builder.load(_byte_ptr(context, builder, lty, lengths, b)), i64)

    def at(p):
        return _byte_ptr(context, builder, outty, out, p)

    builder.store(builder.trunc(tw, i16), builder.bitcast(at(pos), i16.as_pointer())).align = 1
    a0 = builder.add(pos, ir.Constant(i64, 2))
    builder.store(p0, builder.bitcast(at(a0), v16.as_pointer())).align = 1
    a1 = builder.add(a0, length(b0))
    builder.store(p1, builder.bitcast(at(a1), v16.as_pointer())).align = 1
    return builder.add(a1, length(b1))


def unpack_group8(context, builder, src, pos, tw, dst, dpos, consts, tables):
    """The IR of one group's fields (from data[pos] on, tag word tw: i32) spread into 8
    32-bit lanes by two pshufb (the second half's fields start LENGTHS[first byte] after
    the first's), decoded by _decode8 and stored as 8 uint32 at out[dpos]. Reads the 16
    bytes at pos and the 16 at the second half's start. src, dst: (numba type, value) of
    data and out; consts: (msh, add, s8, s16) as _decode8 takes them; tables: [(type,
    value)] of UNPACK_ROWS, LENGTHS."""
    (dty, data), (outty, out) = src, dst
    (rty, rows), (lty, lengths) = tables
    i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
    v16, v8 = ir.VectorType(i8, 16), ir.VectorType(i32, 8)
    b0 = builder.zext(builder.and_(tw, ir.Constant(i32, 0xFF)), i64)
    b1 = builder.zext(builder.lshr(tw, ir.Constant(i32, 8)), i64)

    def fields(p, b):
        return _pshufb(builder, _load_vec(context, builder, dty, data, p, v16),
                       _row(context, builder, rty, rows, b))

    len0 = builder.zext(builder.load(_byte_ptr(context, builder, lty, lengths, b0)), i64)
    lo, hi = fields(pos, b0), fields(builder.add(pos, len0), b1)
    v = builder.bitcast(builder.shuffle_vector(lo, hi, ir.Constant(ir.VectorType(i32, 32), list(range(32)))), v8)
    res = _decode8(builder, v, tw, *consts)
    d = _byte_ptr(context, builder, outty, out, builder.shl(dpos, ir.Constant(i64, 2)))
    builder.store(res, builder.bitcast(d, v8.as_pointer())).align = 4
