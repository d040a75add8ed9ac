"""CompressionBlock: every exponent x random mantissas x both signs, checked against the
golden model's tag, stored field, width and decoded value, in both wire format versions:
version 1 (the paper's codec, golden.compression_block) for several k of 1..126, version 2
(the bounded codec) for every k of 1..16."""

import numpy as np

import cocotb
from cocotb.triggers import Timer

from inceptionn import golden
from inceptionn.rtl import harness

DUT = "compression_block"
KS = (1, 6, 8, 10, 16, 126)
EB_KS = tuple(range(1, 17))


def _design():
    from inceptionn.hw.compression_block import CompressionBlock
    return CompressionBlock()


def _patterns(seed, per_exp=8):
    """All 256 exponents x (0, all-ones and per_exp - 2 random mantissas) x both signs."""
    rng = np.random.default_rng(seed)
    e = np.repeat(np.arange(256, dtype=np.uint32), per_exp)
    mant = rng.integers(0, 1 << 23, size=e.size, dtype=np.uint32)
    mant[0::per_exp] = 0
    mant[1::per_exp] = (1 << 23) - 1
    pos = (e << np.uint32(23)) | mant
    return np.concatenate([pos, pos | np.uint32(1 << 31)])


def _golden(bits, k, v2):
    """(tag, stored, width, decoded) of the golden codec of that version."""
    codec = "bounded" if v2 else "paper"
    tag, stored, width, decoded = golden.compression_block(bits, k, codec)
    # The decoded value is what the receiver gets from (tag, stored).
    assert np.array_equal(decoded, golden.decompression_block(tag, stored, k, codec))
    if v2:   # same tags, bands and widths as version 1
        assert np.array_equal(tag, golden.compression_block(bits, k)[0])
    return tag, stored, width, decoded


@cocotb.test()
@cocotb.parametrize((("v2", "k"), [(0, k) for k in KS] + [(1, k) for k in EB_KS]))
async def every_exponent(dut, v2, k):
    bits = _patterns(seed=k, per_exp=8 if not v2 else 4)
    tag, stored, width, decoded = _golden(bits, k, v2)
    dut.k.value = k
    dut.v2.value = v2
    bad = []
    for i, v in enumerate(bits.tolist()):
        dut.value.value = v
        await Timer(1, "ns")
        got = (int(dut.tag.value), int(dut.bits.value), int(dut.width.value),
               int(dut.decoded.value))
        want = (int(tag[i]), int(stored[i]), int(width[i]), int(decoded[i]))
        if got != want:
            bad.append(f"v2={v2} k={k} f={v:#010x}: got tag/bits/width/decoded {got}, want {want}")
    assert not bad, f"{len(bad)} mismatches, first: " + "; ".join(bad[:5])
    # Every tag actually occurred for the k values that have all four bands.
    if k >= 2:
        assert set(np.unique(tag).tolist()) == {0, 1, 2, 3}


def test_compression_block():
    harness.run(_design, DUT, "inceptionn.sim.test_compression_block")
