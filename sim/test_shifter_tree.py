"""ShifterTree, combinational and registered, side by side on the same inputs: random
fields over all 4^8 width combinations (make sim-stress; make test a random eighth of
them) plus extreme patterns, against
golden.shifter_tree, with random clock-enable gaps for the registered trees; the coded
form (fields cleared above their widths, widths as 2-bit codes, as the CompressionUnit
uses it) registered beside them."""

import itertools
import random

import numpy as np

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from inceptionn import golden
from inceptionn.rtl import harness
from inceptionn.sim.axis import Clock, stress_count

DUT = "shifter_tree"
WIDTHS = (0, 1, 2, 4)


def _design():
    from amaranth import Module
    from amaranth.lib import data, wiring
    from amaranth.lib.wiring import In, Out
    from inceptionn.hw.shifter_tree import ShifterTree

    class Top(wiring.Component):
        # One set of inputs into both variants of the tree.
        bits: In(data.ArrayLayout(32, 8))
        width: In(data.ArrayLayout(3, 8))
        mbits: In(data.ArrayLayout(32, 8))
        code: In(data.ArrayLayout(2, 8))
        en: In(1)
        c_data: Out(256)
        c_length: Out(6)
        r_data: Out(256)
        r_length: Out(6)
        k_data: Out(256)
        k_length: Out(6)

        def elaborate(self, platform):
            m = Module()
            m.submodules.comb = c = ShifterTree(registered=False)
            m.submodules.reg = r = ShifterTree(registered=True)
            m.submodules.coded = k = ShifterTree(registered=True, coded=True)
            for t in (c, r):
                m.d.comb += [t.bits.eq(self.bits), t.width.eq(self.width)]
            m.d.comb += [
                k.bits.eq(self.mbits), k.width.eq(self.code), k.en.eq(self.en),
                self.k_data.eq(k.data), self.k_length.eq(k.length),
                r.en.eq(self.en),
                self.c_data.eq(c.data), self.c_length.eq(c.length),
                self.r_data.eq(r.data), self.r_length.eq(r.length),
            ]
            return m

    return Top()


def _cases(seed):
    rng = random.Random(seed)
    # Every width combination once (make sim-stress; make test: an eighth of them, each
    # field still meeting every width of its neighbours), in random order, after the extremes.
    combos = list(itertools.product(WIDTHS, repeat=8))
    rng.shuffle(combos)
    combos = combos[:stress_count(len(combos) // 8, len(combos))]
    combos = [(0,) * 8, (4,) * 8, (1,) * 8, (2,) * 8, (4, 0) * 4, (0, 4) * 4] + combos
    cases = []
    for widths in combos:
        # Random bits everywhere, also above each field's width (they must be ignored);
        # some cases use all-ones fields to catch stray bits ORed into a neighbour.
        fields = [0xFFFFFFFF if rng.random() < 0.1 else rng.getrandbits(32) for _ in range(8)]
        packed = golden.shifter_tree(np.array(fields, np.uint32), np.array(widths, np.uint8))
        cases.append((fields, widths, packed))
    return cases


def _pack(fields, widths):
    bits = sum(f << (32 * j) for j, f in enumerate(fields))
    width = sum(w << (3 * j) for j, w in enumerate(widths))
    return bits, width


def _pack_coded(fields, widths):
    mbits = sum((f & ((1 << (8 * w)) - 1)) << (32 * j)
                for j, (f, w) in enumerate(zip(fields, widths)))
    code = sum(WIDTHS.index(w) << (2 * j) for j, w in enumerate(widths))
    return mbits, code


def _check(where, i, data, length, packed):
    want_data = int.from_bytes(packed, "little")
    assert (length, data) == (len(packed), want_data), (
        f"{where} tree, case {i}: got length {length} data {data:#066x}, "
        f"want length {len(packed)} data {want_data:#066x}")


@cocotb.test()
async def all_width_combinations(dut):
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.rst.value = 1
    dut.en.value = 0
    await RisingEdge(dut.clk)
    dut.rst.value = 0
    cases = _cases(1)
    gaps = random.Random(2)
    pushed = []            # what the registered tree took, in order (None: filler)
    i = 0
    while len(pushed) < len(cases) + 3:
        await RisingEdge(dut.clk)
        en = gaps.random() >= 0.2
        if i < len(cases):
            fields, widths, packed = cases[i]
            dut.bits.value, dut.width.value = _pack(fields, widths)
            dut.mbits.value, dut.code.value = _pack_coded(fields, widths)
        dut.en.value = int(en)
        await ReadOnly()
        if i < len(cases):
            _check("combinational", i, int(dut.c_data.value), int(dut.c_length.value), packed)
        # The registered tree shows what it took three enabled clocks ago, and holds
        # it while en is low.
        if len(pushed) >= 3 and pushed[-3] is not None:
            _check("registered", len(pushed) - 3, int(dut.r_data.value),
                   int(dut.r_length.value), pushed[-3])
            _check("coded", len(pushed) - 3, int(dut.k_data.value),
                   int(dut.k_length.value), pushed[-3])
        if en:
            pushed.append(packed if i < len(cases) else None)
            i += 1
    assert i >= len(cases)


def test_shifter_tree():
    harness.run(_design, DUT, "inceptionn.sim.test_shifter_tree")
