"""The device codec's Triton kernels (drivers/collectives/device_codec_triton.py) against
golden and the torch operations: the same bytes, index and decoded bits for every float
class and every k of both codecs, and the same errors for damaged bytes or a wrong index.

They run where triton imports and either torch sees a GPU (the kernels on CUDA) or
TRITON_INTERPRET=1 is set (the interpreter on CPU tensors: slow, so the sizes are small);
elsewhere they skip (triton is not a dependency of the project)."""

import os

import numpy as np
import pytest
import torch

from inceptionn import golden
from inceptionn.drivers.collectives.device_codec import (DeviceCodec, index_bytes,
                                                          triton_available)
from test_device_codec import CODEC_KS, _bits, _mixed, _tensor

CUDA = torch.cuda.is_available()
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
pytestmark = pytest.mark.skipif(
    not triton_available() or not (CUDA or INTERPRET),
    reason="needs triton and a CUDA GPU, or triton with TRITON_INTERPRET=1 (CPU tensors)")
DEVICE = "cuda" if CUDA and not INTERPRET else "cpu"


def _pair(codec, k, block):
    return (DeviceCodec(codec, k, block=block, impl="triton"),
            DeviceCodec(codec, k, block=block, impl="torch"))


def _check(codec, k, block, bits):
    """The kernels' bytes and index equal golden's and the torch operations'; their
    values equal golden's."""
    tri, ref = _pair(codec, k, block)
    x = _tensor(bits, DEVICE)
    data, index = tri.encode(x)
    assert data.device.type == DEVICE and data.dtype == torch.uint8
    assert index.dtype == torch.int32 and 4 * index.numel() == index_bytes(bits.size, block)
    want = golden.pack_groups(bits, k, codec)
    assert data.cpu().numpy().tobytes() == want
    rdata, rindex = ref.encode(x)
    assert torch.equal(index.cpu(), rindex.cpu())
    got = tri.decode(data, index, bits.size)
    assert got.dtype == torch.float32 and got.device.type == DEVICE
    values = golden.unpack_groups(want, bits.size, k, codec)[0].tobytes()
    assert _bits(got).tobytes() == values
    rt = tri.roundtrip(x)                  # the one-pass kernel, no bytes
    assert rt.device.type == DEVICE and _bits(rt).tobytes() == values


def test_the_path_is_triton_where_asked():
    tri, ref = _pair("bounded", 10, 64)
    assert tri.path(DEVICE) == "triton" and ref.path(DEVICE) == "torch ops"
    assert DeviceCodec("bounded", 10).path("cpu") == "golden.fast"
    if CUDA:
        assert DeviceCodec("bounded", 10).path("cuda") == "triton"


@pytest.mark.parametrize("codec,k", CODEC_KS, ids=[f"{c}-{k}" for c, k in CODEC_KS])
def test_every_k_on_every_float_class(codec, k):
    _check(codec, k, 8, _mixed(k, 1001))


@pytest.mark.parametrize("n", [1, 7, 8, 9, 63, 64, 65, 8 * 64 * 3 + 1, 8 * 1024 + 8])
@pytest.mark.parametrize("block", [1, 2, 64])
def test_lengths_and_index_blocks(n, block):
    _check("bounded", 10, block, _mixed(n, n)[:n])


def test_encode_tiles():
    """Many encode tiles (device_codec_triton.TILE_G groups each) with a short last
    one, and an index block that spans tiles (block 4096)."""
    n = 8 * (3 * 1024 + 5) - 3
    bits = _mixed(11, n)[:n]
    _check("paper", 10, 64, bits)
    _check("bounded", 7, 4096, bits)


@pytest.mark.skipif(not CUDA or INTERPRET, reason="a large buffer: on a GPU only")
def test_large_buffer_against_the_torch_operations():
    x = torch.randn(5_000_003, device="cuda") * 1e-3
    x[::997] = torch.tensor(float("nan"))
    tri, ref = _pair("bounded", 10, 64)
    data, index = tri.encode(x)
    rdata, rindex = ref.encode(x)
    assert torch.equal(data, rdata) and torch.equal(index, rindex)
    assert torch.equal(tri.decode(data, index, x.numel()).view(torch.int32),
                       ref.decode(rdata, rindex, x.numel()).view(torch.int32))
    assert torch.equal(tri.roundtrip(x).view(torch.int32), ref.roundtrip(x).view(torch.int32))


def test_damage_is_an_error():
    bits = _mixed(3, 3000)
    tri, ref = _pair("bounded", 10, 16)
    data, index = tri.encode(_tensor(bits, DEVICE))
    n = bits.size
    cases = []
    for i, f in [(1, 1), (2, -1), (0, 2), (-1, 1)]:
        bad = index.clone()
        bad[i] += f
        cases.append((data, bad, n))
    for v in (-5, 1 << 30):
        bad = index.clone()
        bad[3] = v
        cases.append((data, bad, n))
    tw = data.clone()
    tw[int(index[2])] ^= 0x03          # the first tag of block 2's first group: one more field
    cases += [(data[:-1], index, n), (torch.cat([data, data[:3]]), index, n),
              (data, index[:-1], n), (data, index, n + 100), (data[:0], index, n),
              (tw, index, n)]
    for args in cases:
        for c in (tri, ref):
            with pytest.raises(ValueError):
                c.decode(*args)
    assert _bits(tri.decode(data, index, n)).tobytes() == _bits(ref.decode(data, index, n)).tobytes()


def test_zero_values_and_bad_impl():
    tri, _ = _pair("paper", 10, 64)
    data, index = tri.encode(torch.zeros(0, device=DEVICE))
    assert data.numel() == 0 and index.numel() == 0
    assert tri.decode(data, index, 0).numel() == 0
    assert tri.roundtrip(torch.zeros(0, device=DEVICE)).numel() == 0
    with pytest.raises(ValueError, match="impl"):
        DeviceCodec("paper", 10, impl="cuda")


def test_non_contiguous_and_shaped_input():
    x = _tensor(_mixed(5, 4000), DEVICE)[: 2 * 1500].view(2, 1500)[:, ::3]
    tri, ref = _pair("bounded", 12, 64)
    data, index = tri.encode(x)
    assert data.cpu().numpy().tobytes() == \
        golden.pack_groups(np.ascontiguousarray(_bits(x.reshape(-1))), 12, "bounded")
    assert torch.equal(index.cpu(), ref.encode(x)[1].cpu())
