"""The device codec against golden: the same group bytes as golden.pack_groups and the
same decoded bits as golden.unpack_groups, for every float class and every k of both
codecs, on the CPU (its torch operations and its golden.fast path) and, where torch sees
one, on CUDA (`make test-cuda` runs this file there). Damaged bytes or a wrong index are
errors."""

import numpy as np
import pytest
import torch

from inceptionn import golden
from inceptionn.drivers.collectives.device_codec import DeviceCodec, index_bytes

# (device, impl): on the CPU both paths; "auto" on CUDA is Triton where it imports.
DEVICES = [("cpu", "torch"), ("cpu", "fast")] + \
    ([("cuda", "torch"), ("cuda", "auto")] if torch.cuda.is_available() else [])
DEVICE_IDS = [f"{d}-{i}" for d, i in DEVICES]
CODEC_KS = ([("paper", k) for k in range(golden.K_MIN, golden.K_MAX + 1)]
            + [("bounded", k) for k in range(golden.EB_K_MIN, golden.EB_K_MAX + 1)])
# Zeros of both signs, infinities, NaNs (quiet, signalling, with payloads), subnormals,
# the largest and smallest normals, 1.0 and the edges of the bands at k = 10.
SPECIAL = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001,
                    0x00000001, 0x807FFFFF, 0x00800000, 0x80800000, 0x3F800000, 0x3A800000,
                    0x3A7FFFFF, 0x3D000000, 0x3CFFFFFF, 0x38000000, 0x33800000, 0x7F7FFFFF,
                    0xFF7FFFFF], np.uint32)
EVERY_EXPONENT = (np.arange(512, dtype=np.uint32)[:, None] << np.uint32(23)
                  | np.array([0, 1, 0x400000, 0x7FFFFF], np.uint32)).reshape(-1)


def _mixed(seed, n):
    rng = np.random.default_rng(seed)
    parts = [rng.normal(0.0, s, n).astype(np.float32).view(np.uint32) for s in (1e-4, 1e-2, 1.0)]
    pool = np.concatenate(parts + [EVERY_EXPONENT, SPECIAL,
                                   rng.integers(0, 2**32, n, dtype=np.uint32)])
    return np.concatenate([SPECIAL, EVERY_EXPONENT, pool[rng.integers(0, pool.size, n)]])


def _tensor(bits, device):
    return torch.from_numpy(bits.view(np.int32).copy()).view(torch.float32).to(device)


def _bits(t):
    return t.cpu().view(torch.int32).numpy().view(np.uint32)


@pytest.mark.parametrize("device,impl", DEVICES, ids=DEVICE_IDS)
@pytest.mark.parametrize("codec,k", CODEC_KS, ids=[f"{c}-{k}" for c, k in CODEC_KS])
def test_every_k_on_every_float_class(device, impl, codec, k):
    bits = _mixed(k, 1001)
    c = DeviceCodec(codec, k, block=8, impl=impl)
    data, index = c.encode(_tensor(bits, device))
    assert data.device.type == device and index.device.type == device
    want_bytes = golden.pack_groups(bits, k, codec)
    assert data.cpu().numpy().tobytes() == want_bytes
    want = golden.unpack_groups(want_bytes, bits.size, k, codec)[0]
    assert _bits(c.decode(data, index, bits.size)).tobytes() == want.tobytes()
    assert _bits(c.roundtrip(_tensor(bits, device))).tobytes() == want.tobytes()


@pytest.mark.parametrize("device,impl", DEVICES, ids=DEVICE_IDS)
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 63, 64, 65, 8 * 64 * 3 + 1])
@pytest.mark.parametrize("block", [1, 2, 64])
def test_lengths_and_index_blocks(device, impl, n, block):
    bits = _mixed(n, n)[:n]
    c = DeviceCodec("bounded", 10, block=block, impl=impl)
    data, index = c.encode(_tensor(bits, device))
    assert data.cpu().numpy().tobytes() == golden.pack_groups(bits, 10, "bounded")
    assert 4 * index.numel() == index_bytes(n, block)
    assert _bits(c.decode(data, index, n)).tobytes() == \
        golden.unpack_groups(data.cpu().numpy().tobytes(), n, 10, "bounded")[0].tobytes()


@pytest.mark.parametrize("device,impl", DEVICES, ids=DEVICE_IDS)
def test_damage_is_an_error(device, impl):
    bits = _mixed(3, 3000)
    c = DeviceCodec("bounded", 10, block=16, impl=impl)
    data, index = c.encode(_tensor(bits, device))
    n = bits.size
    bad_index = index.clone()
    bad_index[1] += 1
    for args in [(data[:-1], index, n), (torch.cat([data, data[:3]]), index, n),
                 (data, bad_index, n), (data, index[:-1], n), (data, index, n + 100)]:
        with pytest.raises(ValueError):
            c.decode(*args)


def test_bad_arguments():
    with pytest.raises(ValueError, match="codec"):
        DeviceCodec("zfp", 10)
    with pytest.raises(ValueError):
        DeviceCodec("bounded", 17)
    with pytest.raises(ValueError, match="power of two"):
        DeviceCodec("paper", 10, block=3)
    with pytest.raises(ValueError, match="float32"):
        DeviceCodec("paper", 10).encode(torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="impl"):
        DeviceCodec("paper", 10, impl="numpy")


def test_auto_codes_cpu_tensors_with_golden_fast():
    assert DeviceCodec("bounded", 10).path("cpu") == "golden.fast"
    assert DeviceCodec("bounded", 10, impl="torch").path("cpu") == "torch ops"


def test_a_one_entry_index_is_plain_memory():
    """The ring sends the index as bytes (view(torch.uint8)), also when it has one entry."""
    data, index = DeviceCodec("bounded", 10, block=64).encode(torch.ones(100))
    assert index.view(torch.uint8).numel() == 4


@pytest.mark.parametrize("codec,k", [("paper", 10), ("bounded", 1), ("bounded", 16)])
@pytest.mark.parametrize("n", [8 * 16 * 6, 8 * 16 * 6 + 5, 8 * 16 * 9 + 1])
def test_pieces_on_threads_give_one_piece_bytes(codec, k, n):
    """golden.fast's CPU path cut in pieces coded on threads: the same bytes, index and
    values as one piece (golden's), every float class."""
    bits = _mixed(n + k, n)[:n]
    one = DeviceCodec(codec, k, block=16, impl="fast", threads=1)
    many = DeviceCodec(codec, k, block=16, impl="fast", threads=3, piece=8 * 16)
    assert len(many._cuts(n)) == 3
    data, index = many.encode(_tensor(bits, "cpu"))
    d1, i1 = one.encode(_tensor(bits, "cpu"))
    assert data.numpy().tobytes() == d1.numpy().tobytes() == golden.pack_groups(bits, k, codec)
    assert index.tolist() == i1.tolist()
    want = golden.unpack_groups(d1.numpy().tobytes(), n, k, codec)[0].tobytes()
    assert _bits(many.decode(data, index, n)).tobytes() == want
    assert _bits(many.roundtrip(_tensor(bits, "cpu"))).tobytes() == want


def test_pieces_on_threads_refuse_damage():
    bits = _mixed(5, 8 * 16 * 9)
    c = DeviceCodec("bounded", 10, block=16, impl="fast", threads=3, piece=8 * 16)
    data, index = c.encode(_tensor(bits, "cpu"))
    n = bits.size
    for at in (1, 3, 6, index.numel() - 1):        # inside a piece and at the cuts
        for delta in (1, -1, 10 ** 6):
            bad = index.clone()
            bad[at] += delta
            with pytest.raises(ValueError):
                c.decode(data, bad, n)
    for args in [(data[:-1], index, n), (torch.cat([data, data[:3]]), index, n), (data, index, n + 100)]:
        with pytest.raises(ValueError):
            c.decode(*args)
    with pytest.raises(ValueError, match="threads"):
        DeviceCodec("bounded", 10, threads=0)
