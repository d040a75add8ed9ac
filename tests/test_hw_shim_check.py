"""hw/shim_check.ShimCheck against golden.shim_check on random and edge messages
(Amaranth's simulator: the block alone, before it is wired into the engines)."""

import zlib

import numpy as np
from amaranth.sim import Simulator

from inceptionn.hw.shim_check import MESSAGE_BYTES, ShimCheck, crc32_columns


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
    dut = ShimCheck()
    got = []

    async def bench(ctx):
        for msg in msgs:
            ctx.set(dut.msg, int.from_bytes(msg, "little"))
            await ctx.tick()
            got.append(ctx.get(dut.word))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert got == [zlib.crc32(msg) for msg in msgs]
    assert got[-1] == int.from_bytes(comp[4:8], "big")
