"""DecompressionBlock against golden.decompression_block, combinational and pipelined
variants side by side (one sim-only wrapper drives both from the same inputs).

Both wire format versions: version 1 against golden.decompression_block, stored fields
from golden.compression_block on random floats of every class for k in {1, 6, 8, 10, 16,
126}; version 2 (the bounded codec, the middle of the step) for every k of 1..16. Plus raw random fields for every tag (q = 0
with the sign set, and garbage above the field's width, which the block must ignore) and
every q of both bands, in both versions.
"""

import random

import numpy as np

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

from inceptionn import golden
from inceptionn.rtl import harness
from inceptionn.sim.axis import Clock

DUT = "decompression_block"
KS = (1, 6, 8, 10, 16, 126)
EB_KS = tuple(range(1, 17))


def _design():
    from amaranth import Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out
    from inceptionn.hw.decompression_block import DecompressionBlock

    class Both(wiring.Component):
        tag: In(2)
        bits: In(32)
        v2: In(1)
        k: In(5)
        en: In(1)
        value_comb: Out(32)
        value_pipe: Out(32)

        def elaborate(self, platform):
            m = Module()
            m.submodules.comb = c = DecompressionBlock(pipelined=False)
            m.submodules.pipe = p = DecompressionBlock(pipelined=True)
            assert (c.LATENCY, p.LATENCY) == (0, 1)
            m.d.comb += [c.tag.eq(self.tag), c.bits.eq(self.bits),
                         p.tag.eq(self.tag), p.bits.eq(self.bits), p.en.eq(self.en),
                         c.v2.eq(self.v2), c.k.eq(self.k), p.v2.eq(self.v2), p.k.eq(self.k),
                         self.value_comb.eq(c.value), self.value_pipe.eq(p.value)]
            return m

    return Both()


def float_bits(rng, n):
    nrng = np.random.default_rng(rng.randrange(1 << 32))
    sigma = nrng.choice([1e-6, 1e-4, 1e-3, 1e-2, 0.1, 0.5, 3.0], n)
    gauss = (nrng.standard_normal(n) * sigma).astype(np.float32).view(np.uint32)
    banded = ((nrng.integers(0, 2, n) << 31) | (nrng.integers(0, 256, n) << 23)
              | nrng.integers(0, 1 << 23, n)).astype(np.uint32)
    rand32 = nrng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    special = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
                        1, 0x807FFFFF, 0x3F800000, 0x3F7FFFFF, 0x7F7FFFFF], np.uint32)
    kind = nrng.integers(0, 4, n)
    return np.where(kind == 0, gauss, np.where(kind == 1, banded, np.where(
        kind == 2, rand32, special[nrng.integers(0, special.size, n)]))).astype(np.uint32)


def _fields(bits, k, v2):
    """(tag, stored) of the codec of that version."""
    return golden.compression_block(bits, k, "bounded" if v2 else "paper")[:2]


def _restore(tags, stored, k, v2):
    if v2:
        return golden.decompression_block(tags, stored, k, "bounded")
    return golden.decompression_block(tags, stored)


def vectors(rng, k, v2):
    """Fields of codec (k, v2): random floats, band edges, raw random fields, every q."""
    tags, stored = [], []
    n_float = 2500 if not v2 else 600
    for k in (k,):
        t, s = _fields(float_bits(rng, n_float), k, v2)
        # Every exponent at and around the band limits of this k, both signs.
        lim_t, lim_m = golden.band_limits(k)
        exps = np.array(sorted({e for e in (lim_t - 1, lim_t, lim_m - 1, lim_m, 126, 127)
                                if 0 <= e <= 255}), np.uint32)
        edge = ((np.arange(2, dtype=np.uint32)[:, None, None] << 31)
                | (exps[None, :, None] << 23)
                | np.array([0, 1, 0x7FFFFF, 0x400000], np.uint32)[None, None, :]).ravel()
        t2, s2 = _fields(edge.astype(np.uint32), k, v2)
        tags += [t, t2]
        stored += [s, s2]
    nrng = np.random.default_rng(rng.randrange(1 << 32))
    # Raw fields: every tag, random bits (garbage above the width included).
    n = 700 if not v2 else 250
    tags.append(nrng.integers(0, 4, n).astype(np.uint8))
    stored.append(nrng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32))
    # q = 0 with the sign set (and clear) in both fixed-point bands, over garbage.
    garbage = nrng.integers(0, 1 << 32, 8, dtype=np.uint64).astype(np.uint32)
    zeros_8 = (garbage & np.uint32(0xFFFFFF00)) | np.array([0x80, 0x00] * 4, np.uint32)
    zeros_16 = (garbage & np.uint32(0xFFFF0000)) | np.array([0x8000, 0x0000] * 4, np.uint32)
    tags += [np.full(8, 1, np.uint8), np.full(8, 2, np.uint8)]
    stored += [zeros_8, zeros_16]
    # Every q of both bands, sign set.
    q7 = np.arange(256, dtype=np.uint32)
    q15 = np.concatenate([np.arange(256, dtype=np.uint32),
                          np.arange(256, 1 << 16, 41 if not v2 else 97, dtype=np.uint32)])
    tags += [np.full(q7.size, 1, np.uint8), np.full(q15.size, 2, np.uint8)]
    stored += [q7, q15]
    return np.concatenate(tags), np.concatenate(stored)


@cocotb.test()
@cocotb.parametrize((("v2", "k"), [(0, k) for k in KS] + [(1, k) for k in EB_KS]))
async def against_golden(dut, v2, k):
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.rst.value = 1
    dut.en.value = 1
    dut.v2.value = v2
    dut.k.value = k & 31
    await RisingEdge(dut.clk)
    dut.rst.value = 0
    rng = random.Random(1000 * v2 + k)
    tags, stored = vectors(rng, k, v2)
    want = _restore(tags, stored, k, v2)
    got_c, got_p = [], []
    for t, s in zip(tags.tolist(), stored.tolist()):
        await FallingEdge(dut.clk)
        dut.tag.value = t
        dut.bits.value = s
        await RisingEdge(dut.clk)
        await ReadOnly()
        got_c.append(int(dut.value_comb.value))
        got_p.append(int(dut.value_pipe.value))
    for name, got in (("combinational", got_c), ("pipelined", got_p)):
        bad = np.nonzero(np.array(got, np.uint32) != want)[0]
        assert bad.size == 0, (f"v2={v2} k={k} {name}: {bad.size} of {want.size} differ; first tag {tags[bad[0]]} "
                               f"bits {stored[bad[0]]:#010x}: got {got[bad[0]]:#010x} want {want[bad[0]]:#010x}")
    # en low: the pipelined block holds its value while the inputs change.
    held = int(dut.value_pipe.value)
    await FallingEdge(dut.clk)
    dut.en.value = 0
    dut.tag.value = 3
    dut.bits.value = held ^ 0xFFFFFFFF
    for _ in range(3):
        await RisingEdge(dut.clk)
        await ReadOnly()
        assert int(dut.value_pipe.value) == held
        assert int(dut.value_comb.value) == held ^ 0xFFFFFFFF


def test_decompression_block():
    harness.run(_design, DUT, "inceptionn.sim.test_decompression_block")
