"""hw/shim_check.ShimCheck against golden.shim_check on random and edge messages
(Amaranth's simulator: the block alone), with fixed bytes, and its depth synthesized."""

import zlib

import numpy as np
import pytest
from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from inceptionn.rtl import synthesis as synth
from inceptionn.hw.shim_check import MESSAGE_BYTES, ShimCheck, crc32_columns
from synthesis import needs_yosys


def test_the_columns_are_zlibs_crc32():
    """The XOR columns the block is built from give zlib's CRC-32 on random messages."""
    zero, cols = crc32_columns()
    assert zero == zlib.crc32(bytes(MESSAGE_BYTES))
    rng = np.random.default_rng(1)
    for m in [bytes(range(1, MESSAGE_BYTES + 1))] + [rng.bytes(MESSAGE_BYTES) for _ in range(200)]:
        word = zero
        for i in range(8 * MESSAGE_BYTES):
            if m[i // 8] >> (i % 8) & 1:
                word ^= cols[i]
        assert word == zlib.crc32(m)


def test_shim_check_equals_golden():
    from inceptionn import golden
    rng = np.random.default_rng(0)
    msgs = [bytes(MESSAGE_BYTES), b"\xff" * MESSAGE_BYTES]
    msgs += [rng.bytes(MESSAGE_BYTES) for _ in range(6)]
    # one real message: golden's, from a version-3 frame
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    f = golden.tx_frame(bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2", tos=0x28, id=0x1234)
                              / UDP(sport=4000, dport=5000) / bytes(400)))
    info = golden.packet_matcher(f)
    comp = f[info.payload_offset:]
    msgs.append(golden.check_message(f, info.l3, info.l4, info.proto, len(comp), comp[:4]))
    got = _run(ShimCheck(), msgs)
    assert got == [zlib.crc32(msg) for msg in msgs]
    assert got[-1] == int.from_bytes(comp[4:8], "big")


def _run(dut, msgs):
    got = []

    async def bench(ctx):
        for msg in msgs:
            ctx.set(dut.msg, int.from_bytes(msg, "little"))
            await ctx.tick().repeat(ShimCheck.LATENCY)
            got.append(ctx.get(dut.word))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return got


def test_fixed_bytes_are_constants_and_not_read():
    """With bytes 11 and 24 fixed, the word is the CRC of the message holding the fixed
    values there, whatever the input carries in those bytes."""
    fixed = {11: 0, 24: 0xC7}
    rng = np.random.default_rng(2)
    msgs = [rng.bytes(MESSAGE_BYTES) for _ in range(8)] + [b"\xff" * MESSAGE_BYTES]
    want = []
    for msg in msgs:
        b = bytearray(msg)
        for j, v in fixed.items():
            b[j] = v
        want.append(zlib.crc32(bytes(b)))
    assert _run(ShimCheck(fixed=fixed), msgs) == want
    assert want != [zlib.crc32(m) for m in msgs]        # the fixing does change the word
    with pytest.raises(ValueError, match="out of range"):
        ShimCheck(fixed={MESSAGE_BYTES: 0})


@needs_yosys
def test_xor_trees_map_to_three_levels(tmp_path):
    """From the message's flip-flops to the word's, at most 3 LUT levels per stage (the
    engines' budget is 6; as one stage the mapper made the XORs 5 deep alone)."""
    class Top(wiring.Component):
        msg: In(8 * MESSAGE_BYTES)
        word: Out(32)

        def elaborate(self, platform):
            m = Module()
            m.submodules.c = c = ShimCheck(fixed={11: 0, 24: 0xC7})
            r = Signal(8 * MESSAGE_BYTES)
            m.d.sync += [r.eq(self.msg), self.word.eq(c.word)]
            m.d.comb += c.msg.eq(r)
            return m

    r = synth.report_design(lambda: Top(), "shim_check_top", tmp_path)
    assert r["levels"] <= 3, r["levels_path"]


def test_one_message_every_clock():
    """Back to back, a message each clock: each word comes LATENCY clocks after its
    message, the stages hold no state across messages."""
    rng = np.random.default_rng(3)
    msgs = [rng.bytes(MESSAGE_BYTES) for _ in range(12)]
    dut = ShimCheck()
    got = []

    async def bench(ctx):
        for i in range(len(msgs) + ShimCheck.LATENCY):
            if i < len(msgs):
                ctx.set(dut.msg, int.from_bytes(msgs[i], "little"))
            await ctx.tick()
            if i + 1 >= ShimCheck.LATENCY:
                got.append(ctx.get(dut.word))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert got[:len(msgs)] == [zlib.crc32(m) for m in msgs]
