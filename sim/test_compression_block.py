"""CompressionBlock: every exponent x random mantissas x both signs x several k, checked
against the golden model's tag, stored field, width and decoded value."""

import numpy as np

import cocotb
from cocotb.triggers import Timer

from inceptionn import golden
from inceptionn.rtl import harness

DUT = "compression_block"
KS = (1, 6, 8, 10, 16, 126)


def _design():
    from inceptionn.hw.compression_block import CompressionBlock
    return CompressionBlock()


def _patterns(seed):
    """All 256 exponents x (0, all-ones and 6 random mantissas) x both signs."""
    rng = np.random.default_rng(seed)
    e = np.repeat(np.arange(256, dtype=np.uint32), 8)
    mant = rng.integers(0, 1 << 23, size=e.size, dtype=np.uint32)
    mant[0::8] = 0
    mant[1::8] = (1 << 23) - 1
    pos = (e << np.uint32(23)) | mant
    return np.concatenate([pos, pos | np.uint32(1 << 31)])


@cocotb.test()
@cocotb.parametrize(k=KS)
async def every_exponent(dut, k):
    bits = _patterns(seed=k)
    tag, stored, width, decoded = golden.compression_block(bits, k)
    # The decoded value is what the receiver gets from (tag, stored).
    assert np.array_equal(decoded, golden.decompression_block(tag, stored))
    dut.k.value = k
    bad = []
    for i, v in enumerate(bits.tolist()):
        dut.value.value = v
        await Timer(1, "ns")
        got = (int(dut.tag.value), int(dut.bits.value), int(dut.width.value),
               int(dut.decoded.value))
        want = (int(tag[i]), int(stored[i]), int(width[i]), int(decoded[i]))
        if got != want:
            bad.append(f"k={k} f={v:#010x}: got tag/bits/width/decoded {got}, want {want}")
    assert not bad, f"{len(bad)} mismatches, first: " + "; ".join(bad[:5])
    # Every tag actually occurred for the k values that have all four bands.
    if k >= 2:
        assert set(np.unique(tag).tolist()) == {0, 1, 2, 3}


def test_compression_block():
    harness.run(_design, DUT, "inceptionn.sim.test_compression_block")
