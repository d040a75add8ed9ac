"""The hook's fp16 path: a bucket rounded to float16, summed by the process group's own
all-reduce in float16, widened back (PyTorch's fp16_compress_hook), each in one pass.

Why the hook keeps no residual of fp16's rounding (it did until 2026-11-30): the group
rounds every partial sum to float16 as well, P - 1 times a value in a ring all-reduce,
on ranks that never see it, so this rank's own rounding is at most 1/P of the error,
and keeping it exactly cost a pass reading the residual and writing the loss, 14 bytes
a value against the cast's 6 (12M values on one core: 21-30 ms against 5). At P = 4 on
2 cores the hook's fp16 step was then 1.07-1.36x torch's (docs/benchmarks.md). A
residual left by the coded ring is still added in before the rounding, and then
dropped: nothing the ring kept is lost at a switch. `round_half` keeps the exact loss
for a caller that asks (`loss=`).

Why the sum is in float16 (as torch's hook) and not a float32 sum of fp16-rounded
values: the wire then carries 2 bytes a value on any collective the group picks (a ring
all-reduce sends 2 (P-1)/P of them per value); a float32 sum of the rounded values
needs either float32 on the wire (no byte saved) or an all-gather of every rank's fp16
vector ((P-1) x 2 bytes a value: more than float32's ring from P = 3 on). The price:
the group rounds each partial sum to float16 on whichever rank adds it, a second
error (at most half an fp16 ulp of the sum per add) that this rank never sees and so
cannot feed back.

Each value is scaled by 2^-s, 2^s the smallest power of two >= the world size, before
it is rounded: a power of two changes no bit of a float32's significand (the loss,
where asked for, stays exact), and a value beyond +-65504 (float16's largest) is
clamped to it, so the sum of P scaled values cannot overflow (torch's hook makes such a
value inf; here its excess is dropped, or kept in the loss where asked for: exact up to
twice that, float32-rounded beyond; a gradient of that size means the run diverges).
"""

from __future__ import annotations

import math
import threading

import numpy as np

from ...golden.fast_half import round_half_into, scale_half_into, widen_into

__all__ = ["half_scale", "round_half", "widen_sum"]

HALF_MAX = 65504.0


def half_scale(world: int) -> int:
    """s: values are rounded as x * 2^-s, 2^s the smallest power of two >= world."""
    return max(0, math.ceil(math.log2(world))) if world > 1 else 0


def round_half(x, world: int, loss: np.ndarray | None = None,
               residual: np.ndarray | None = None):
    """x (a float32 tensor), plus `residual` where given, as float16 times 2^-s; with
    `loss` (float32, x's size), what the rounding dropped, x + residual - 2^s float(h),
    exactly, written there (non-finite values: 0, nothing to keep, as the ring's loss).
    `residual` (a host array, x on the host) may be `loss` itself.

    A contiguous float32 host tensor takes one compiled pass (golden/fast_half.py: x
    and the residual read once, h and the loss written once; without the loss, x read
    and h written, as torch's cast); otherwise torch's ops, four passes over x with the
    loss, two without, no float32 temporary but one scratch kept per thread and size (a
    fresh one would fault in its pages every step)."""
    import torch
    s = half_scale(world)
    top = HALF_MAX * 2.0 ** -s
    host = x.device.type == "cpu" and x.is_contiguous() and x.dtype == torch.float32
    if host and (loss is None or loss.dtype == np.float32):
        h = torch.empty(x.shape, dtype=torch.float16)
        bits = h.numpy().reshape(-1).view(np.uint16)
        if loss is None and residual is None:
            scale_half_into(x.detach().numpy().reshape(-1), 2.0 ** -s, top, bits)
        elif loss is not None:
            round_half_into(x.numpy().reshape(-1), residual, 2.0 ** -s, 2.0 ** s, top,
                            bits, loss.reshape(-1))
        else:
            raise ValueError("round_half: a residual goes with a host tensor and its loss")
        return h
    if residual is not None:
        raise ValueError("round_half: a residual goes with a host tensor and its loss")
    scaled = _scratch(x)
    torch.mul(x, 2.0 ** -s, out=scaled).clamp_(-top, top)
    h = scaled.to(torch.float16)
    if loss is not None:
        out = torch.from_numpy(loss).view(x.shape)
        scaled.copy_(h).mul_(2.0 ** s)
        torch.sub(x, scaled, out=out)
        if not math.isfinite(float(out.sum())):     # a pass that allocates nothing
            torch.nan_to_num_(out, nan=0.0, posinf=0.0, neginf=0.0)
    return h


_local = threading.local()


def _scratch(x):
    """A float32 tensor of x's shape and device, this thread's, reused."""
    import torch
    buf = getattr(_local, "buf", None)
    if buf is None or buf.shape != x.shape or buf.device != x.device:
        buf = _local.buf = torch.empty_like(x, dtype=torch.float32)
    return buf


def widen_sum(h, world: int, out=None, mean: bool = True):
    """The float16 sum `h` back to float32 (into `out`), unscaled (exact) and, with
    `mean`, divided by `world` (one rounding, as the float32 paths' average). A host
    `out` takes one compiled pass; otherwise torch's ops."""
    import torch
    up = 2.0 ** half_scale(world)
    if out is not None and out.device.type == "cpu" and h.device.type == "cpu" \
            and out.is_contiguous() and h.is_contiguous() and out.dtype == torch.float32:
        widen_into(h.numpy().reshape(-1).view(np.uint16), up, world if mean else 1,
                   out.numpy().reshape(-1))
        return out
    w = h.to(torch.float32) if out is None else out.copy_(h)
    w.mul_(up)
    return w.div_(world) if mean else w
