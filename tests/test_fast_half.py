"""golden/fast_half.py: the float16 casts against NumPy's (every float16, and float32s of
every exponent, the rounding ties and the edges; every float32 in make sim-stress), and
the fp16 path's one pass against the torch ops it replaces, bit for bit."""

import numpy as np
import pytest
import torch

from inceptionn.golden import fast_half
from inceptionn.drivers.collectives.fp16 import HALF_MAX, half_scale, round_half
from inceptionn.drivers.collectives.memory import Memory
from synthesis import STRESS


def _cast(bits32):
    """Both casts of the float32 patterns `bits32` (uint32): ours and NumPy's, as uint16."""
    x = bits32.view(np.float32)
    ours = fast_half.to_half_bits(x, np.empty(x.size, np.uint16))
    with np.errstate(over="ignore"):
        ref = x.astype(np.float16).view(np.uint16)
    return ours, ref


def _check_cast(bits32):
    ours, ref = _cast(bits32)
    nan = np.isnan(bits32.view(np.float32))
    bad = np.flatnonzero((ours != ref) & ~nan)
    assert bad.size == 0, [(hex(int(bits32[i])), hex(int(ours[i])), hex(int(ref[i])))
                           for i in bad[:5]]
    # a NaN: the quiet NaN with its sign
    sign = ((bits32[nan] >> 16) & 0x8000).astype(np.uint16)
    assert np.array_equal(ours[nan], sign | 0x7E00)


def test_the_cast_of_float32_edges_and_ties():
    rng = np.random.default_rng(0)
    # every exponent with random significands, both signs
    e = np.repeat(np.arange(256, dtype=np.uint32), 2000)
    m = rng.integers(0, 1 << 23, e.size, dtype=np.uint32)
    pats = [(e << 23) | m, (e << 23) | m | np.uint32(0x80000000)]
    # for each float16 exponent (subnormals included): the ties, one below and one above,
    # at every position where float16 rounds a float32 off
    for sh in range(13, 25):
        for ee in range(102, 143):
            base = (np.uint32(ee) << 23) | (rng.integers(0, 1 << 10, 64, dtype=np.uint32) << sh)
            half = np.uint32(1 << (sh - 1))
            for d in (half - 1, half, half + 1, np.uint32((1 << sh) + (1 << (sh - 1)))):
                pats.append((base + d) & np.uint32(0x7FFFFFFF))
    # edges: 0, the smallest subnormals, 2^-25, 2^-24, 2^-14, 65504, 65519, 65520, inf, NaNs
    edges = np.float32([0, 1e-45, 2.0 ** -26, 2.0 ** -25, np.nextafter(np.float32(2.0 ** -25), 1),
                        2.0 ** -24, 3 * 2.0 ** -25, 2.0 ** -14, 65504, 65519.996, 65520,
                        65536, 1e30, np.inf]).view(np.uint32)
    pats += [edges, edges | np.uint32(0x80000000),
             np.uint32([0x7FC00000, 0x7F800001, 0xFFC00000, 0x7FFFFFFF])]
    _check_cast(np.concatenate(pats).astype(np.uint32))


@pytest.mark.skipif(not STRESS, reason="every float32 pattern (about 7 minutes): make sim-stress")
def test_the_cast_of_every_float32():
    step = 1 << 26
    for lo in range(0, 1 << 32, step):
        _check_cast(np.arange(lo, lo + step, dtype=np.uint64).astype(np.uint32))


def test_every_float16_widens_exactly():
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    ours = fast_half.from_half_bits(h, np.empty(h.size, np.float32))
    assert np.array_equal(ours.view(np.uint32), h.view(np.float16).astype(np.float32).view(np.uint32))


def _torch_ops(x, world, residual=None):
    """The torch path of round_half (a strided view of x takes it), with the residual
    added first as the hook did: (h as uint16, loss)."""
    v = x.copy() if residual is None else x + residual
    strided = torch.from_numpy(np.stack([v, v], 1))[:, 0]
    loss = np.empty_like(x)
    h = round_half(strided, world, loss)
    return h.numpy().view(np.uint16), loss


def _values(n, seed):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.standard_normal(n).astype(np.float32) * np.float32(10.0 ** e)
                        for e in (-9, -6, -3, 0, 3, 5)])
    x[::97] = np.float32(np.nan)
    x[5::101] = np.float32(np.inf)
    x[7::103] = -np.float32(7e4)
    return x


@pytest.mark.parametrize("world", [1, 2, 3, 4, 8])
def test_one_pass_equals_the_torch_ops(world):
    x = _values(5000, world)
    r = _values(5000, world + 100) * np.float32(1e-3)
    h_ref, loss_ref = _torch_ops(x, world, r)
    nan_ref = np.isnan(h_ref.view(np.float16))
    for aliased in (False, True):
        loss = r.copy() if aliased else np.empty_like(x)
        h = round_half(torch.from_numpy(x.copy()), world, loss, loss if aliased else r)
        got = h.numpy().view(np.uint16)
        assert np.array_equal(np.isnan(got.view(np.float16)), nan_ref)
        assert np.array_equal(got[~nan_ref], h_ref[~nan_ref])
        assert np.array_equal(loss.view(np.uint32), loss_ref.view(np.uint32))
    # without a residual; the clamp (float16's largest, scaled) and the exact loss
    h_ref, loss_ref = _torch_ops(x, world)
    loss = np.empty_like(x)
    h = round_half(torch.from_numpy(x), world, loss).numpy().view(np.uint16)
    ok = ~np.isnan(h.view(np.float16))
    assert np.array_equal(h[ok], h_ref[ok]) and np.array_equal(loss, loss_ref)
    s = half_scale(world)
    assert np.abs(h.view(np.float16)[ok].astype(np.float32)).max() <= HALF_MAX * 2.0 ** -s
    fin = np.isfinite(x)
    back = h.view(np.float16).astype(np.float64) * 2.0 ** s
    small = fin & (np.abs(x) < HALF_MAX * 2.0 ** -s)
    assert np.array_equal(back[small] + loss[small], x[small].astype(np.float64))
    assert np.all(loss[~fin] == 0)


@pytest.mark.parametrize("world", [1, 2, 3, 4, 8])
def test_the_cast_alone_equals_the_torch_ops(world):
    """The hook's fp16 path (no loss kept): one compiled pass, torch's ops' float16."""
    x = _values(5000, world + 7)
    h_ref, _ = _torch_ops(x, world)
    h = round_half(torch.from_numpy(x), world).numpy().view(np.uint16)
    nan = np.isnan(h_ref.view(np.float16))
    assert np.array_equal(np.isnan(h.view(np.float16)), nan)
    assert np.array_equal(h[~nan], h_ref[~nan])
    assert np.array_equal(fast_half.scale_half_into(x, 2.0 ** -half_scale(world),
                                                    HALF_MAX * 2.0 ** -half_scale(world),
                                                    np.empty(x.size, np.uint16)), h)
    with pytest.raises(ValueError, match="a residual goes with"):
        round_half(torch.from_numpy(x), world, None, x)


def test_the_memory_knows_a_residual_held_in_the_loss_buffer():
    params = [("a", 3), ("b", 5)]
    mem, buf = Memory(), np.zeros(8, np.float32)
    assert not mem.held_in(params, buf)
    mem.adopt(params, buf)
    assert mem.held_in(params, buf)
    assert not mem.held_in(params, np.zeros(8, np.float32))        # another buffer
    assert not mem.held_in([("b", 5), ("a", 3)], buf)               # another order
    mem.update([("a", 3)], np.ones(3, np.float32))                  # in place: still held
    assert mem.held_in(params, buf)
    mem.residual["a"] = np.ones(3, np.float32)
    assert not mem.held_in(params, buf)


@pytest.mark.parametrize("world", [1, 2, 3, 4, 6, 8])
@pytest.mark.parametrize("mean", [True, False])
def test_the_widening_pass_equals_the_torch_ops(world, mean):
    from inceptionn.drivers.collectives.fp16 import widen_sum
    h = torch.from_numpy(np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16))
    ref = h.to(torch.float32).mul_(2.0 ** half_scale(world))
    if mean:
        ref = ref.div_(world)
    out = torch.empty(h.shape, dtype=torch.float32)
    got = widen_sum(h, world, out=out, mean=mean)
    assert got is out
    ok = ~torch.isnan(ref)
    assert torch.equal(got[ok].view(torch.int32), ref[ok].view(torch.int32))
    assert torch.isnan(got[~ok]).all()
