"""Compiled loops for the hook's fp16 path (drivers/collectives/fp16.py): one pass that
scales and clamps each value and rounds it to float16 (the hook's), or that also adds a
residual and keeps what the rounding lost (`round_half`'s exact loss, for a caller that
asks); the widening back. Not a NIC block: the NIC never sends float16.

Why: written with torch ops the path took six passes over the bucket (the residual
added in, scale and clamp, the cast, the cast back, the product, the difference) and a
seventh to find a non-finite loss: about 1.8x gloo's step on loopback where torch's own
fp16 hook, one cast, takes 1.05x (docs/benchmarks.md). Here each value is read once and
its float16 and its loss written once.

The cast to float16 is integer arithmetic on the float32's bits for a normal float16
and one float32 addition for a subnormal one, rounding to nearest, ties to even (IEEE
754's default, what torch's and NumPy's casts do); a NaN becomes the quiet NaN 0x7E00
with its sign. The product, sum, clamp and loss are the torch ops', bit for bit
(tests/test_fast_half.py; the cast against NumPy's for every float32 pattern in `make
sim-stress`). No fastmath: the float32 sum, product and difference round as NumPy's
do. The loop releases the GIL; it uses no kernels of other files, so numba's
on-disk cache (keyed on this file) needs no touching when other files change.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic
from llvmlite import ir

from . import fast_host  # noqa: F401  (first: numba's cache of these files)

__all__ = ["half_bits", "half_value", "round_half_into", "scale_half_into", "widen_into",
           "to_half_bits", "from_half_bits"]


# The two casts, written in LLVM's 32-bit integer operations: numba widens uint32
# arithmetic to 64 bits, which halves the vectors' lanes. No branch: each choice is a
# select, so that LLVM vectorizes the loop around them.

def _i32(v):
    return ir.Constant(ir.IntType(32), v)


def _half_bits_ir(builder, f):
    """IR: the float16 bits (in an i32) nearest the float f, ties to even; a NaN gives
    the quiet NaN 0x7E00 with f's sign (torch's cast)."""
    b, c = builder, _i32
    w = b.bitcast(f, ir.IntType(32))
    sign = b.and_(b.lshr(w, c(16)), c(0x8000))
    a = b.and_(w, c(0x7FFFFFFF))
    # a normal float16 (2^-14 and up): rebias the exponent by 112, round off 13 bits
    m = b.sub(a, c(0x38000000))
    normal = b.lshr(b.add(b.add(m, c(0xFFF)), b.and_(b.lshr(m, c(13)), c(1))), c(13))
    # below 2^-14 (a float16 subnormal, or 0): |f| + 0.5 in float32, whose last place
    # weighs 2^-24 as the subnormals' does, so the addition rounds (to nearest even);
    # its significand is the float16's
    absf = b.bitcast(a, ir.FloatType())
    sub = b.sub(b.bitcast(b.fadd(absf, ir.Constant(ir.FloatType(), 0.5)), ir.IntType(32)),
                c(0x3F000000))
    r = b.select(b.icmp_unsigned(">=", a, c(0x38800000)), normal, sub)
    r = b.select(b.icmp_unsigned("<", a, c(0x477FF000)), r, c(0x7C00))  # 65520 and up: inf
    r = b.select(b.icmp_unsigned("<=", a, c(0x7F800000)), r, c(0x7E00))  # NaN
    return b.or_(sign, r)


def _half_value_ir(builder, h):
    """IR: the float of the float16 of bits h (an i32; exact: every float16 is a
    float32)."""
    b, c = builder, _i32
    sign = b.shl(b.and_(h, c(0x8000)), c(16))
    e = b.and_(b.lshr(h, c(10)), c(0x1F))
    m = b.and_(h, c(0x3FF))
    m13 = b.shl(m, c(13))
    normal = b.or_(sign, b.or_(b.shl(b.add(e, c(112)), c(23)), m13))
    special = b.or_(sign, b.or_(c(0x7F800000), m13))
    sub = b.fmul(b.uitofp(m, ir.FloatType()), ir.Constant(ir.FloatType(), 2.0 ** -24))
    sub = b.or_(sign, b.bitcast(sub, ir.IntType(32)))                # m x 2^-24, exact
    r = b.select(b.icmp_unsigned("==", e, c(0)), sub, normal)
    r = b.select(b.icmp_unsigned("==", e, c(0x1F)), special, r)
    return b.bitcast(r, ir.FloatType())


@intrinsic
def half_bits(typingctx, f):
    """The float16 bits (a uint32) nearest the float32 f, ties to even."""
    def codegen(context, builder, signature, args):
        return _half_bits_ir(builder, args[0])
    return types.uint32(types.float32), codegen


@intrinsic
def half_value(typingctx, h):
    """The float32 of the float16 of bits h (uint32)."""
    def codegen(context, builder, signature, args):
        return _half_value_ir(builder, args[0])
    return types.float32(types.uint32), codegen


@intrinsic
def _bits(typingctx, x):
    """A float32's bits as a uint32 (LLVM's bitcast: no instruction)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.uint32(types.float32), codegen


_BLOCK = 4096              # values per block (its scratch stays in L1)


@njit(cache=True, nogil=True)
def round_half_into(x, residual, down, up, top, h, loss):
    """For each i: v = x[i] + residual[i] (residual: None for none), y = v * down clamped
    to [-top, top] (a NaN stays NaN), h[i] = y's float16 bits (h: uint16), loss[i] =
    v - float(h[i]) * up, 0 where not finite. `residual` may be `loss` itself (each value
    is read before it is written). x, residual and loss float32; down, up powers of two."""
    down, up, top = np.float32(down), np.float32(up), np.float32(top)
    # The residual goes through a block of scratch: where it is `loss` itself LLVM cannot
    # tell the read from the write apart and would run the loop one value at a time.
    r = np.zeros(_BLOCK, np.float32)
    for lo in range(0, x.size, _BLOCK):
        hi = min(x.size, lo + _BLOCK)
        if residual is not None:
            r[:hi - lo] = residual[lo:hi]
        _round_block(x[lo:hi], r, down, up, top, h[lo:hi], loss[lo:hi])
    return h


@njit(cache=True, nogil=True, inline="always")
def _round_block(x, r, down, up, top, h, loss):
    for i in range(x.size):
        v = x[i] + r[i]
        y = v * down
        y = top if y > top else y
        y = -top if y < -top else y
        b = half_bits(y)
        h[i] = np.uint16(b)
        d = v - half_value(b) * up
        loss[i] = d if np.isfinite(d) else np.float32(0.0)


@njit(cache=True, nogil=True)
def scale_half_into(x, down, top, h):
    """h[i] = the float16 bits (uint16) of x[i] * down clamped to [-top, top] (a NaN stays
    NaN): round_half_into's h without a residual or a loss, the DDP hook's fp16 path in
    one pass (reading 4 bytes a value and writing 2, as torch's cast does)."""
    down, top = np.float32(down), np.float32(top)
    for i in range(x.size):
        y = x[i] * down
        y = top if y > top else y
        y = -top if y < -top else y
        h[i] = np.uint16(half_bits(y))
    return h


@njit(cache=True, nogil=True)
def widen_into(h, up, div, out):
    """out[i] = float(h[i]) * up / div (h: float16 bits as uint16; up a power of two, so
    the product is exact and the division the one rounding; div 1: none). float32."""
    up, div = np.float32(up), np.float32(div)
    if div == np.float32(1.0):
        for i in range(h.size):
            out[i] = half_value(np.uint32(h[i])) * up
    else:
        for i in range(h.size):
            out[i] = half_value(np.uint32(h[i])) * up / div
    return out


@njit(cache=True, nogil=True)
def to_half_bits(x, out):
    """out[i] = the float16 bits (uint16) nearest the float32 x[i] (the cast alone)."""
    for i in range(x.size):
        out[i] = np.uint16(half_bits(x[i]))
    return out


@njit(cache=True, nogil=True)
def from_half_bits(h, out):
    """out[i] = the float32 of the float16 of bits h[i] (uint16)."""
    for i in range(h.size):
        out[i] = half_value(np.uint32(h[i]))
    return out
