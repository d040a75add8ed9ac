"""golden.fast's vector kernels: the group packer and unpacker, the same bytes and bit
patterns as the per-value loops in fast.py, faster (measured by `make bench`,
docs/benchmarks.md).

Why: the per-value loops carry a serial chain (the output position) through every
value. Here the serial part is cut to the least each group needs (one add per group) and
everything else is vector work:
  pack:   every field and width by arithmetic (no table gathers). Where the CPU
          compresses bytes in a register (AVX-512 VBMI2's vpcompressb: compress_group8,
          run by fast_groups' loop as pack_compress, zero blocks skipped as there),
          each group is coded in registers: its 8 fields as |x| 2^w truncated to an
          integer (one multiply and one conversion, exact: the same bits as the shift
          of Algorithm 2), its tag word by one pext, its fields' kept bytes by one
          32-byte compress and store. pack_pairs codes a block of BLOCK values in loops
          the compiler vectorises, pairs of fields joined into one 64-bit word and
          stored 8 bytes at a time: any CPU, and every kernel's last partial group
          (the group coders of fast_shuffle.py and fast_pairs.py, which the other
          kernels run, code a group in registers).
  unpack: serial per group: the tag word, the next group's position (popcounts of the
          tag word); four zero tag words in a row (a run of zero gradients, common in
          real ones) are stepped over with one 8-byte load. Where the CPU has a masked
          expanding load (AVX-512 VBMI2's vpexpandb: unpack_expand), each group's fields
          are copied into 8 32-bit lanes by one such load and decoded there and then, in
          registers, off the walk's chain, so the decoding costs little more than the
          walk (elsewhere fast_groups.py runs the same walk with another coder). A field {s, q}
          decodes to (-1)^s (q mul + add) 2^(e - 127), e = e8 or e16
          (decompression_block.decode_table's values; the paper's codec: mul 1, add 0,
          q = 0 gives +0.0; the bounded codec: mul 2, add 1), computed as an integer
          converted to float32 times a power of two: both exact (the integer has at
          most 16 bits, the product is a normal float).
Each kernel stops where a group might run past the data; fast.py's per-group loops go
on from there. A little-endian host is assumed, as in fast.py. fast_kernels.py binds the
kernels this host runs (fast_host.py chooses; fast_groups.py holds the AVX2 and the
portable ones); fast_host.py keeps numba's on-disk cache of all golden/fast*.py true to
their sources and the kernel chosen.
"""

from __future__ import annotations

import functools

import numpy as np
from . import fast_host  # noqa: F401  (first: numba's cache of these files)
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from llvmlite import ir

from .compression_block import band_limits
from .wire import GROUP_VALUES

__all__ = ["pack_pairs", "compress_group8", "unpack_expand", "unpack_marked", "enc_consts", "dec_consts",
           "BLOCK"]

_u8, _u16, _u32, _u64 = np.uint8, np.uint16, np.uint32, np.uint64
_U1, _U2 = np.uint64(1), np.uint64(2)
_SWAR1 = np.uint64(0x0101010101010101)
_MAX_GROUP = 2 + 4 * GROUP_VALUES   # 34 bytes: a tag word and 8 raw floats
BLOCK = 1024               # values per block of pack_pairs (its temporaries stay in L1)


# ---------------------------------------------------------------- LLVM operations
# What numba does not spell: one instruction each where the CPU has it.

@intrinsic
def _popcount(typingctx, x):
    """The population count of a uint64 (LLVM's ctpop)."""
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return types.uint64(types.uint64), codegen


def _byte_ptr(context, builder, arrty, arr, pos):
    a = context.make_array(arrty)(context, builder, arr)
    return builder.gep(builder.bitcast(a.data, ir.IntType(8).as_pointer()), [pos])


def _load(bits):
    """An intrinsic: the little-endian uint<bits> at byte pos of a uint8 array (one
    unaligned load; the caller keeps it inside the array)."""
    nbty = {16: types.uint32, 32: types.uint32, 64: types.uint64}[bits]

    @intrinsic
    def load(typingctx, src, pos):
        def codegen(context, builder, signature, args):
            p = _byte_ptr(context, builder, signature.args[0], args[0], args[1])
            v = builder.load(builder.bitcast(p, ir.IntType(bits).as_pointer()))
            v.align = 1
            return v if bits > 16 else builder.zext(v, ir.IntType(32))
        return nbty(src, types.uint64), codegen
    return load


_load16, _load32, _load64 = _load(16), _load(32), _load(64)


def _splat8(builder, v):
    """<8 x v.type> with v in every lane."""
    vty = ir.VectorType(v.type, 8)
    u = builder.insert_element(ir.Constant(vty, ir.Undefined), v, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(u, ir.Constant(vty, ir.Undefined),
                                  ir.Constant(ir.VectorType(ir.IntType(32), 8), [0] * 8))


def _tags8(builder, tw):
    """The 8 lanes' tags (<8 x i32>, 0..3) of tag word tw (i32)."""
    v8 = ir.VectorType(ir.IntType(32), 8)
    return builder.and_(builder.lshr(_splat8(builder, tw), ir.Constant(v8, [0, 2, 4, 6, 8, 10, 12, 14])),
                        ir.Constant(v8, [3] * 8))


def _decode8(builder, v, tw, msh, add, s8, s16, t=None):
    """The 8 decoded words (<8 x i32>) of a group's fields v (<8 x i32>, each field in its
    lane's low bytes, the bytes past its width ignored) of tag word tw (i32; or its lanes'
    tags t, _tags8's, where the caller has them), as _decode_lane decodes a lane. q mul +
    add is spelled (q << msh) | add: dec_consts' (1, 0) and (2, 1). The integer is
    converted as signed (it has at most 16 bits): one vcvtdq2ps on any x86, where an
    unsigned conversion takes several instructions without AVX-512."""
    i32 = ir.IntType(32)
    v8, f8 = ir.VectorType(i32, 8), ir.VectorType(ir.FloatType(), 8)

    def c(x):
        return ir.Constant(v8, x if isinstance(x, list) else [x] * 8)

    def eq(a, x):
        return builder.icmp_unsigned("==", a, c(x))

    t = _tags8(builder, tw) if t is None else t
    b16 = eq(t, 2)
    q = builder.and_(v, builder.select(b16, c(0x7FFF), c(0x7F)))
    sign = builder.shl(builder.and_(builder.lshr(v, builder.select(b16, c(15), c(7))), c(1)), c(31))
    num = builder.or_(builder.shl(q, _splat8(builder, msh)), _splat8(builder, add))
    f = builder.fmul(builder.sitofp(num, f8),
                     builder.select(b16, _splat8(builder, s16), _splat8(builder, s8)))
    dec = builder.select(eq(num, 0), c(0), builder.or_(builder.bitcast(f, v8), sign))
    return builder.select(eq(t, 3), v, builder.select(eq(t, 0), c(0), dec))


@intrinsic
def _expand_decode8(typingctx, src, pos, mask, tw, dst, dpos, mshift, add, s8, s16):
    """One group, in registers: its fields (from src[pos] on) copied into 8 32-bit lanes
    by one expanding load (llvm.masked.expandload, vpexpandb: the lanes' bytes whose bit
    is set in mask, the rest zero; reads exactly popcount(mask) bytes), decoded as
    _decode_block decodes a lane (tags from the tag word tw), and stored as 8 uint32 at
    dst[dpos]. q mul + add is spelled (q << mshift) | add: dec_consts' (1, 0) and (2, 1)."""
    def codegen(context, builder, sig, args):
        src_, pos_, mask_, tw_, dst_, dpos_, msh_, add_, s8_, s16_ = args
        i8, i32 = ir.IntType(8), ir.IntType(32)
        v32i8, v8 = ir.VectorType(i8, 32), ir.VectorType(i32, 8)
        mty = ir.VectorType(ir.IntType(1), 32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(v32i8, [i8.as_pointer(), mty, v32i8]),
            "llvm.masked.expandload.v32i8")
        raw = builder.call(fn, [_byte_ptr(context, builder, sig.args[0], src_, pos_),
                                builder.bitcast(mask_, mty), ir.Constant(v32i8, None)])
        res = _decode8(builder, builder.bitcast(raw, v8), tw_, msh_, add_, s8_, s16_)
        d = _byte_ptr(context, builder, sig.args[4], dst_, builder.shl(dpos_, ir.Constant(ir.IntType(64), 2)))
        builder.store(res, builder.bitcast(d, v8.as_pointer())).align = 4
        return context.get_dummy_value()
    return types.void(src, types.uint64, types.uint32, types.uint32, dst, types.uint64,
                      types.uint32, types.uint32, types.float32, types.float32), codegen


@intrinsic
def _f32_bits(typingctx, x):
    """The bit pattern of a float32."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.uint32(types.float32), codegen


@intrinsic
def _bits_f32(typingctx, x):
    """The float32 of a bit pattern."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.uint32), codegen


@intrinsic
def _popcount32(typingctx, x):
    """The population count of a uint32."""
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return types.uint32(types.uint32), codegen


def _load_vec(context, builder, arrty, arr, pos, vty):
    """The vector of type vty at byte pos (i64) of arr (one unaligned load)."""
    x = builder.load(builder.bitcast(_byte_ptr(context, builder, arrty, arr, pos), vty.as_pointer()))
    x.align = 1
    return x


def _load8(context, builder, arrty, arr, i0):
    """The 8 uint32 arr[i0:i0 + 8] as <8 x i32>."""
    return _load_vec(context, builder, arrty, arr, builder.shl(i0, ir.Constant(ir.IntType(64), 2)),
                     ir.VectorType(ir.IntType(32), 8))


def _code8(builder, x, tz, t16, s8, s16):
    """(fields, tags, raw, tag bits) of the 8 bit patterns x (<8 x i32>): each field as
    _field gives it (the same arithmetic, 8 lanes at once), each tag (<8 x i32>, 0..3),
    raw: <8 x i1>, the lanes stored as they are; tag bits: the tags' low and high bits
    (<8 x i1> each) from the compares themselves, for a tag word built without the tags
    (three selects and two compares fewer where the tags are not used otherwise). tz,
    t16: the 0-bit and 8-bit bands' limits on |x|'s bits; s8, s16: 2^w8, 2^15."""
    v8, f8 = ir.VectorType(ir.IntType(32), 8), ir.VectorType(ir.FloatType(), 8)

    def c(x):
        return ir.Constant(v8, [x] * 8)

    ax = builder.and_(x, c(0x7FFFFFFF))
    # signed compares: |x|'s bits and the limits are below 2^31, and AVX2 has no
    # unsigned compare (it takes two instructions)
    b16 = builder.icmp_signed(">=", ax, _splat8(builder, t16))
    raw = builder.icmp_signed(">=", ax, c(0x3F800000))      # e >= 127: the float itself
    zero = builder.icmp_signed("<", ax, _splat8(builder, tz))
    # |x| < 1 here: floor(|x| 2^w), exact in float32, is the shift of Algorithm 2
    q = builder.fptosi(builder.fmul(builder.bitcast(ax, f8), builder.select(
        b16, _splat8(builder, s16), _splat8(builder, s8))), v8)
    fv = builder.or_(q, builder.shl(builder.lshr(x, c(31)), builder.select(b16, c(15), c(7))))
    fld = builder.select(raw, x, builder.select(zero, c(0), fv))
    t = builder.select(raw, c(3), builder.select(zero, c(0), builder.select(b16, c(2), c(1))))
    # tag 3 (raw) and 1 (8 bits: neither 0 bits nor 16) have the low bit; 3 and 2, which
    # are the lanes at or above the 16-bit band, the high one
    low = builder.or_(raw, builder.not_(builder.or_(zero, b16)))
    return fld, t, raw, (low, b16)


def compress_group8(context, builder, src, i0, dst, pos, consts, tables=()):
    """The IR of one group, the 8 values from f[i0] on, coded at out[pos] in registers
    (the coder fast_groups' loops run for the avx512 kernel; it takes no tables): fields
    and tags as _code8 gives them, the tag word (the lanes' tags gathered by one pext),
    the fields' kept bytes moved to the front by one register compress
    (llvm.experimental.vector.compress: vpcompressb) and stored as 32 bytes at pos + 2
    (the bytes past the kept ones are scratch). src, dst: (numba type, value) of f and
    out; consts: (tz, t16, s8, s16) as _code8 takes them. Returns the next group's
    offset (i64)."""
    (fty, f_), (outty, out_) = src, dst
    i8, i16, i32, i64 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
    v8, v32i8 = ir.VectorType(i32, 8), ir.VectorType(i8, 32)

    def c(x):
        return ir.Constant(v8, [x] * 8)

    fld, t, raw, _ = _code8(builder, _load8(context, builder, fty, f_, i0), *consts)
    # byte b of lane j is kept when b < the lane's width (0, 1, 2, 4)
    wb = builder.bitcast(builder.mul(builder.select(raw, c(4), t), c(0x01010101)), v32i8)
    keep = builder.icmp_unsigned("<", ir.Constant(v32i8, [0, 1, 2, 3] * 8), wb)
    pext = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64, i64]),
                                          "llvm.x86.bmi.pext.64")
    tw = builder.trunc(builder.call(pext, [builder.bitcast(builder.trunc(t, ir.VectorType(i8, 8)), i64),
                                           ir.Constant(i64, 0x0303030303030303)]), i16)
    comp = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(v32i8, [v32i8, ir.VectorType(ir.IntType(1), 32), v32i8]),
        "llvm.experimental.vector.compress.v32i8")
    kept = builder.call(comp, [builder.bitcast(fld, v32i8), keep, ir.Constant(v32i8, ir.Undefined)])
    builder.store(tw, builder.bitcast(_byte_ptr(context, builder, outty, out_, pos),
                                      i16.as_pointer())).align = 1
    at = builder.add(pos, ir.Constant(i64, 2))
    builder.store(kept, builder.bitcast(_byte_ptr(context, builder, outty, out_, at),
                                        v32i8.as_pointer())).align = 1
    return builder.add(at, builder.zext(builder.ctpop(builder.bitcast(keep, i32)), i64))


# ---------------------------------------------------------------- pack

@functools.lru_cache(maxsize=None)
def enc_consts(k, codec):
    """pack_blocks' (t, mlim, w8) of a codec at 2^-k."""
    t, mlim = band_limits(k)
    return _u32(t), _u32(mlim), _u32(7 + (k // 2 if codec == "bounded" else 0))


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
def pack_pairs(f, t, mlim, w8, out, marks, every, g_base, pos_base):
    """The groups of f's values at the start of out (7 spare bytes past their end), as
    fast._encode gives them, fields stored in pairs (any CPU); returns their byte length.
    With every > 0, marks[j] = pos_base + the byte offset of group j * every - g_base, for
    each such group here (g_base: the groups before f; an index made while packing). A last partial block is padded
    with +0.0, which codes to nothing: its partial group comes out as _encode's."""
    n = f.size
    fld = np.empty(BLOCK, np.uint32)
    wid = np.empty(BLOCK, np.uint8)
    pword = np.empty(BLOCK // 2, np.uint64)
    pwid = np.empty(BLOCK // 2, np.uint8)
    tws = np.empty(BLOCK // 8, np.uint16)
    glen = np.empty(BLOCK // 8, np.uint8)
    pad = np.zeros(BLOCK, np.uint32)
    wid64 = wid.view(np.uint64)
    pos = _u64(0)
    for b0 in range(0, n, BLOCK):
        if b0 + BLOCK <= n:
            src = f[b0:b0 + BLOCK]
            ngroups = BLOCK // 8
        else:
            pad[:n - b0] = f[b0:]
            pad[n - b0:] = 0
            src = pad
            ngroups = (n - b0 + 7) // 8
        for i in range(BLOCK):                  # vectorised
            fv, wd = _field(src[i], t, mlim, w8)
            fld[i] = fv
            wid[i] = _u8(wd)
        for i in range(BLOCK // 2):             # vectorised: a pair's bytes in one word
            w0 = _u32(wid[2 * i])
            pword[i] = _u64(fld[2 * i]) | (_u64(fld[2 * i + 1]) << (_u64(w0) << _u64(3)))
            pwid[i] = _u8(w0 + _u32(wid[2 * i + 1]))
        for g in range(BLOCK // 8):             # a group's 8 widths as the bytes of a word
            w = wid64[g]
            x = w - ((w >> _u64(2)) & _SWAR1)   # width 0, 1, 2, 4 -> tag 0, 1, 2, 3
            x = (x | (x >> _u64(6))) & _u64(0x000F000F000F000F)
            x = (x | (x >> _u64(12))) & _u64(0x000000FF000000FF)
            tws[g] = _u16((x | (x >> _u64(24))) & _u64(0xFFFF))
            glen[g] = _u8(((w * _SWAR1) >> _u64(56)) + _u64(2))
        for g in range(ngroups):                # the serial part
            gi = g_base + b0 // 8 + g
            if every > 0 and gi % every == 0:
                marks[gi // every] = pos_base + pos
            tw = tws[g]
            out[pos] = _u8(tw & _u16(0xFF))
            out[pos + _U1] = _u8(tw >> _u16(8))
            p = pos + _U2
            pos += _u64(glen[g])
            for j in range(4):
                _put8(out, p, pword[4 * g + j])
                p += _u64(pwid[4 * g + j])
    return pos


_NIB_TO_TAG = _SWAR1           # mask nibble 0, 1, 3, 15 -> tag 0, 1, 2, 3: bits 0 + 1 + 3


# ---------------------------------------------------------------- unpack

@functools.lru_cache(maxsize=None)
def dec_consts(k, codec):
    """The unpack kernels' (mul, add, s8, s16) of a codec: s8, s16 = 2^(e8 - 127),
    2^(e16 - 127), the steps of the 8- and 16-bit fields."""
    if codec == "paper":
        return _u32(1), _u32(0), np.float32(2.0 ** -7), np.float32(2.0 ** -15)
    return _u32(2), _u32(1), np.float32(2.0 ** -(k // 2 + 8)), np.float32(2.0 ** -16)


@njit(cache=True, nogil=True, inline="always")
def _decode_lane(t, v, mul, add, s8, s16):
    """The bit pattern a field v (low bits; the bits above its width are ignored) of tag
    t decodes to."""
    b16 = t == _u32(2)
    q = v & (_u32(0x7FFF) if b16 else _u32(0x7F))
    s = _u32(v >> (_u32(15) if b16 else _u32(7))) & _u32(1)
    num = _u32(q * mul + add)
    f = _f32_bits(np.float32(num) * (s16 if b16 else s8))
    dec = _u32(f | (s << _u32(31))) if num != _u32(0) else _u32(0)
    return v if t == _u32(3) else (_u32(0) if t == _u32(0) else dec)


# Per tag-word byte: the expand mask of its 4 fields (nibble j: 0, 1, 3 or 15 for a
# field of 0, 1, 2 or 4 bytes).
_MASK8 = np.array([sum((0, 1, 3, 15)[(b >> (2 * j)) & 3] << (4 * j) for j in range(4))
                   for b in range(256)], np.uint32)


@njit(cache=True, nogil=True, inline="always")
def _zero_steps(data, pos, g, gend, end, out):
    """Runs of zero tag words from group g at pos: four groups (8 zero bytes) at a time,
    up to group gend and byte end; returns (g, pos) after them."""
    while g + 4 <= gend and pos <= end and _load64(data, pos) == _u64(0):
        for j in range(32):
            out[8 * g + j] = _u32(0)
        g += 4
        pos += _u64(8)
    return g, pos


@njit(cache=True, nogil=True, inline="always")
def _expand_group(data, pos, g, out, msh, add, s8, s16):
    """The group at pos decoded into out[8 g:8 g + 8]; returns the next group's offset."""
    tw = _load16(data, pos)
    t = _u64(tw)
    nxt = pos + _U2 + _popcount(t) + _popcount(t & _u64(0xAAAA)) + \
        _popcount((t >> _U1) & t & _u64(0x5555))     # widths 0, 1, 2, 4 summed
    _expand_decode8(data, pos + _U2, _MASK8[tw & _u32(0xFF)] | (_MASK8[tw >> _u32(8)] << _u32(16)),
                    tw, out, _u64(8 * g), msh, add, s8, s16)
    return nxt


@njit(cache=True, nogil=True, inline="always")
def _walk_bounds(data, mul):
    """(data, contiguous: the walks read it by address, so a view is copied; the shift
    that spells dec_consts' mul; the last offset a group may start at with its 34 bytes
    and 8 more inside data; whether any may)."""
    data = np.ascontiguousarray(data)
    size = _u64(data.size)
    room = _u64(_MAX_GROUP + 8)
    return (data, (_u32(1) if mul == _u32(2) else _u32(0)),
            (size - room if size >= room else _u64(0)), size >= room)


@njit(cache=True, nogil=True, inline="always")
def _walk_to(data, pos, g, gend, end, out, msh, add, s8, s16):
    """Groups g.. from pos on, up to group gend and offset end: zero runs stepped,
    every other group expanded and decoded; returns (g, pos) after them."""
    while g < gend and pos <= end:
        g, pos = _zero_steps(data, pos, g, gend, end, out)
        if g >= gend or pos > end:
            break
        pos = _expand_group(data, pos, g, out, msh, add, s8, s16)
        g += 1
    return g, pos


@njit(cache=True, nogil=True)
def unpack_expand(data, groups, out, mul, add, s8, s16):
    """Groups from the start of data into out, each expanded and decoded in registers as
    it is walked (AVX-512 VBMI2: elsewhere LLVM spells the expanding load out byte by
    byte, correct but slow), while the group and 8 bytes more surely lie inside data;
    returns (groups decoded, their byte length). A run of zero tag words is stepped over
    four at a time. The walk (tag word, next offset) is the critical chain and the
    decoding hangs off it (docs/benchmarks.md)."""
    data, msh, end, ok = _walk_bounds(data, mul)
    g, pos = 0, _u64(0)
    if not ok:
        return g, pos
    return _walk_to(data, pos, g, groups, end, out, msh, add, s8, s16)


@njit(cache=True, nogil=True)
def unpack_marked(data, groups, out, mul, add, s8, s16, marks, every):
    """unpack_expand, also writing marks[j] = the byte offset of group j * every (marks
    uint64) for each such group it reaches: what an index says, to check it. Blocks of
    `every` groups in turn (zero steps kept inside a block), so no group is tested for
    a mark; the flat loop above measured 5% faster, so both stay."""
    data, msh, end, ok = _walk_bounds(data, mul)
    g, pos = 0, _u64(0)
    if not ok:
        return g, pos
    while g < groups and pos <= end:
        marks[g // every] = pos
        g, pos = _walk_to(data, pos, g, min(g + every, groups), end, out, msh, add, s8, s16)
    return g, pos
