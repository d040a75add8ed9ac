"""The scale-following bound on the torch transport (drivers/collectives/transports/torch_scaled.py):
the device codec's scaled frames equal the socket ring's ScaledCodec bit for bit, at
every scale a float32 chunk can have (subnormal to the largest finite value, inf and
NaN among them, s at both ends of its range: the products leave the normal range
there), within |error| <= 2^(s-k); and the ring over gloo gives the simulated ring's
bits with ScaledCodec on every hop."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from inceptionn.drivers.collectives.codecs import SCALE_MAX, SCALE_MIN, ScaledCodec  # noqa: E402
from inceptionn.drivers.collectives.codecs import choose_scale  # noqa: E402
from inceptionn.drivers.collectives.transports.torch_scaled import (ScaledDeviceCodec,  # noqa: E402
                                                         choose_scale_tensor)
from test_ddp_hook import spawn  # noqa: E402  (the spawned-ranks helper)


def _chunks():
    rng = np.random.default_rng(0)
    out = {}
    for e in (-40, -20, -6, 0, 6, 20, 37):
        out[f"normal 1e{e}"] = (rng.normal(size=1001) * 10.0 ** e).astype(np.float32)
    big = rng.uniform(1e37, 3.4e38, 300).astype(np.float32)     # s clamped at SCALE_MAX
    big[::3] *= -1
    out["largest finite"] = big
    out["subnormal"] = (rng.normal(size=500) * 1e-41).astype(np.float32)   # s = SCALE_MIN
    mixed = (rng.normal(size=800) * 1e-3).astype(np.float32)
    mixed[::50] = 3e38                                          # the overflow guard's case
    mixed[7], mixed[8], mixed[9] = np.inf, -np.inf, np.nan
    out["mixed with inf and NaN"] = mixed
    out["zeros"] = np.zeros(64, np.float32)
    out["only nonfinite"] = np.array([np.inf, np.nan, -np.inf], np.float32)
    out["one value"] = np.array([-2.5e-9], np.float32)
    return out


CHUNKS = _chunks()


@pytest.mark.parametrize("name", list(CHUNKS))
@pytest.mark.parametrize("impl", ["torch", "fast"])
def test_scaled_device_codec_gives_the_socket_codecs_bytes_and_values(name, impl):
    x = CHUNKS[name]
    k = 10
    ref = ScaledCodec(k)
    dev = ScaledDeviceCodec(k, impl=impl)
    t = torch.from_numpy(x.copy())
    s = choose_scale_tensor(t, k)
    assert s == choose_scale(x, k)
    assert SCALE_MIN <= s <= SCALE_MAX
    data, index = dev.encode(t)
    assert bytes(data.numpy()) == ref.encode(x)
    got = dev.decode(data, index, x.size).numpy()
    want = ref.decode(ref.encode(x), x.size)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(dev.roundtrip(t).numpy().view(np.uint32), want.view(np.uint32))
    fin = np.isfinite(x)
    assert np.array_equal(np.isnan(got), np.isnan(x))
    assert np.array_equal(got[np.isinf(x)], x[np.isinf(x)])
    err = np.abs(got[fin].astype(np.float64) - x[fin])
    assert (err <= 2.0 ** (s - k)).all(), (s, err.max())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", list(CHUNKS))
def test_scaled_device_codec_on_cuda_gives_the_socket_codecs_bytes(name):
    x = CHUNKS[name]
    dev = ScaledDeviceCodec(10)
    t = torch.from_numpy(x.copy()).cuda()
    data, index = dev.encode(t)
    assert bytes(data.cpu().numpy()) == ScaledCodec(10).encode(x)
    want = ScaledCodec(10).roundtrip(x)
    got = dev.decode(data, index, x.size).cpu().numpy()
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(dev.roundtrip(t).cpu().numpy().view(np.uint32), want.view(np.uint32))


def test_the_scale_reaches_both_ends_of_its_range():
    assert choose_scale_tensor(torch.from_numpy(CHUNKS["largest finite"]), 10) == SCALE_MAX
    assert choose_scale_tensor(torch.from_numpy(CHUNKS["subnormal"]), 10) == SCALE_MIN


def test_a_frame_without_its_scale_byte_is_an_error():
    dev = ScaledDeviceCodec(10)
    with pytest.raises(ValueError, match="no scale byte"):
        dev.decode(torch.zeros(0, dtype=torch.uint8), torch.zeros(1, dtype=torch.int32), 8)


# ---------------------------------------------------------------- the ring over gloo

BUCKETS = [(20_000, 3_000), (5_003, 50_000), (7, 2)]


def _values(rank, i, n):
    g = torch.Generator().manual_seed(100 * i + rank)
    x = torch.randn(n, generator=g) * 10.0 ** -(3 + 2 * i)   # small, as a mean's gradients
    x[::11] = 0.0
    return x


def _scaled_ring(rank, world):
    from inceptionn.drivers.collectives.transports.torch_scaled import ScaledTorchRing
    out = []
    for i, (n, chunk) in enumerate(BUCKETS):
        ring = ScaledTorchRing(k=10, chunk=chunk)
        x = _values(rank, i, n)
        ring.allreduce(x)
        out.append(x.view(torch.int32).tolist())
    return out


def _simulated(world, i, n, chunk):
    from inceptionn.drivers.collectives import communicator
    xs = [_values(r, i, n).numpy().copy() for r in range(world)]
    codec = ScaledCodec(10)
    res, _ = communicator.play(
        lambda t: communicator.ring_allreduce(t, xs[t.rank], codec, chunk), world)
    return res


@pytest.mark.long
def test_scaled_torch_ring_gives_the_simulated_rings_bits():
    world = 3                       # blocks of unequal length, a forwarded hop
    res = spawn(_scaled_ring, world, timeout=300)
    assert sorted(res) == list(range(world))
    for i, (n, chunk) in enumerate(BUCKETS):
        want = _simulated(world, i, n, chunk)
        for r in range(world):
            out = res[r][0]
            assert not isinstance(out, str), out
            assert out[i] == want[r].view(np.int32).tolist(), (r, i)
