"""ShifterTree, combinational and registered, side by side on the same inputs: random
fields over width combinations (extremes included) against golden.shifter_tree, with
random clock-enable gaps for the registered tree."""

import os
import random

import numpy as np

import cocotb
from cocotb.triggers import RisingEdge, Timer

from inceptionn import golden
from inceptionn.sim import harness
from inceptionn.sim.axis import Clock

DUT = "shifter_tree"
WIDTHS = (0, 1, 2, 4)
# Random width combinations on top of the extremes; INCEPTIONN_STRESS=1 runs all 4^8.
SAMPLES = 8000


def _design():
    from amaranth import Module
    from amaranth.lib import data, wiring
    from amaranth.lib.wiring import In, Out
    from inceptionn.hw.shifter_tree import ShifterTree

    class Top(wiring.Component):
        # One set of inputs into both variants of the tree.
        bits: In(data.ArrayLayout(32, 8))
        width: In(data.ArrayLayout(3, 8))
        en: In(1)
        c_data: Out(256)
        c_length: Out(6)
        r_data: Out(256)
        r_length: Out(6)

        def elaborate(self, platform):
            m = Module()
            m.submodules.comb = c = ShifterTree(registered=False)
            m.submodules.reg = r = ShifterTree(registered=True)
            for t in (c, r):
                m.d.comb += [t.bits.eq(self.bits), t.width.eq(self.width)]
            m.d.comb += [
                r.en.eq(self.en),
                self.c_data.eq(c.data), self.c_length.eq(c.length),
                self.r_data.eq(r.data), self.r_length.eq(r.length),
            ]
            return m

    return Top()


def _cases(seed):
    rng = random.Random(seed)
    if os.environ.get("INCEPTIONN_STRESS", "0") not in ("", "0"):
        combos = [tuple(WIDTHS[(c >> (2 * j)) & 3] for j in range(8)) for c in range(4 ** 8)]
        rng.shuffle(combos)
    else:
        combos = [(0,) * 8, (4,) * 8, (1,) * 8, (2,) * 8, (4, 0) * 4, (0, 4) * 4,
                  (1, 2, 4, 0, 4, 2, 1, 0), (4, 4, 4, 4, 4, 4, 4, 1), (0,) * 7 + (4,),
                  (4,) + (0,) * 7]
        combos += [tuple(rng.choice(WIDTHS) for _ in range(8)) for _ in range(SAMPLES)]
    cases = []
    for widths in combos:
        # Random bits everywhere, also above each field's width (they must be ignored);
        # some cases use all-ones fields to catch OR-merging of stray bits.
        fields = [0xFFFFFFFF if rng.random() < 0.1 else rng.getrandbits(32) for _ in range(8)]
        packed = golden.shifter_tree(np.array(fields, np.uint32), np.array(widths, np.uint8))
        cases.append((fields, widths, packed))
    return cases


def _pack(fields, widths):
    bits = sum(f << (32 * j) for j, f in enumerate(fields))
    width = sum(w << (3 * j) for j, w in enumerate(widths))
    return bits, width


def _check(where, i, data, length, packed):
    want_data = int.from_bytes(packed, "little")
    assert (length, data) == (len(packed), want_data), (
        f"{where} tree, case {i}: got length {length} data {data:#066x}, "
        f"want length {len(packed)} data {want_data:#066x}")


@cocotb.test()
async def random_fields(dut):
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.rst.value = 1
    dut.en.value = 0
    await RisingEdge(dut.clk)
    dut.rst.value = 0
    cases = _cases(1)
    gaps = random.Random(2)
    pushed = []            # cases taken by the registered tree, in order
    i = 0
    while i < len(cases) or len(pushed) < len(cases) + 3:
        en = gaps.random() >= 0.2
        if i < len(cases):
            fields, widths, packed = cases[i]
            dut.bits.value, dut.width.value = _pack(fields, widths)
            await Timer(1, "ns")
            _check("combinational", i, int(dut.c_data.value), int(dut.c_length.value), packed)
        dut.en.value = int(en)
        await RisingEdge(dut.clk)
        if en:
            pushed.append(cases[i][2] if i < len(cases) else None)
            i += 1
        await Timer(1, "ns")
        if len(pushed) >= 3 and pushed[-3] is not None:
            _check("registered", len(pushed) - 3, int(dut.r_data.value),
                   int(dut.r_length.value), pushed[-3])
    assert len(pushed) >= len(cases)


def test_shifter_tree():
    harness.run(_design, DUT, "inceptionn.sim.test_shifter_tree")
