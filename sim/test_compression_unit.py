"""CompressionUnit: groups of random and special float32 values, random counts and k,
under every idle x backpressure pattern; each output group must equal
golden.compression_unit(values[:count], k) followed by the first ``tail`` bytes of value
slot ``count`` (a payload's raw tail, for groups of fewer than 8 values), with last
alongside; the side port must give each group's decoded payload bytes (the decoded
values, then the tail's bytes as they are) once, in order, with first and last.
About a third of the groups are in wire format version 2 (the bounded codec, k in
1..16), mixed with version 1 groups back to back."""

import random

import numpy as np

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from inceptionn import golden
from inceptionn.drivers.collectives.compressors.inceptionn_eb import EBCodec
from inceptionn.rtl import harness
from inceptionn.sim.axis import PAUSE_MODES, StreamSource, pause_generator, port_sink, start

import pytest

# make test runs the engines' testbenches, which hold this stage (every frame against
# golden); this one runs in make sim and make test-long (which CI runs after make
# test), so that make test keeps within its 8 minutes on a fresh 2-core machine.
pytestmark = pytest.mark.long

DUT = "compression_unit"
GROUPS = 300

SPECIALS = [
    0x00000000, 0x80000000,                 # +0.0, -0.0
    0x00000001, 0x807FFFFF, 0x00400000,     # denormals
    0x7F800000, 0xFF800000,                 # +-Inf
    0x7FC00000, 0x7F800001, 0xFFFFFFFF,     # NaNs
    0x3F800000, 0xBF7FFFFF, 0x3F7FFFFF,     # 1.0 and just below
    0x00800000, 0x7F7FFFFF,                 # smallest normal, largest finite
]


def _design():
    from inceptionn.hw.compression_unit import CompressionUnit
    return CompressionUnit()


def _value(rng, k):
    r = rng.random()
    if r < 0.15:
        return rng.choice(SPECIALS)
    if r < 0.45:
        # Exponents at and around the band limits T and M for this k.
        t, m = 127 - k, 127 - k // 2
        e = min(255, max(0, rng.choice((t - 1, t, t + 1, m - 1, m, m + 1, 111, 112, 119,
                                        120, 126, 127))))
        return (rng.getrandbits(1) << 31) | (e << 23) | rng.getrandbits(23)
    if r < 0.8:
        # Gradient-like magnitudes.
        return int(np.float32(rng.gauss(0, 10 ** rng.uniform(-6, 0))).view(np.uint32))
    return rng.getrandbits(32)


def _groups(seed, n):
    rng = random.Random(seed)
    out = []
    for g in range(n):
        v2 = int(rng.random() < 0.35)
        k = rng.randint(1, 16) if v2 else rng.choice((1, 2, 6, 7, 8, 10, 10, 10, 16, 24, 125, 126))
        count = 8 if rng.random() < 0.6 else rng.randint(1, 8)
        values = [_value(rng, k) for _ in range(8)]
        tail = rng.choice((0, 1, 2, 3, 3)) if count < 8 else 0
        out.append((values, count, k, int(rng.random() < 0.2 or g == n - 1), tail, v2))
    return out


def _expected(values, count, k, last, tail, v2):
    bits = np.array(values[:count], np.uint32)
    codec = "bounded" if v2 else "paper"
    enc = golden.compression_unit(bits, k, codec)
    dec = golden.compression_block(bits, k, codec)[3]
    if v2:   # the compressors' codec is the same one
        assert enc == EBCodec(k).encode(bits.view(np.float32))
    if tail:
        # the raw tail as the payload holds it: the slot's little-endian bytes
        enc += values[count].to_bytes(4, "little")[:tail]
    decoded = b"".join(int(d).to_bytes(4, "little") for d in dec.tolist())
    decoded += values[count].to_bytes(4, "little")[:tail] if tail else b""
    return enc, decoded.ljust(32, b"\0"), last


def _masked(data, mask):
    return bytes(b if (mask >> i) & 1 else 0
                 for i, b in enumerate(data.to_bytes(32, "little")))


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, backpressure=PAUSE_MODES)
async def random_groups(dut, idle, backpressure):
    await start(dut, {"i__valid": 0, "o__ready": 0})

    seed = PAUSE_MODES.index(idle) * 3 + PAUSE_MODES.index(backpressure)
    groups = _groups(seed, GROUPS)
    want = [_expected(*g) for g in groups]
    idle_gen = pause_generator(idle, 10 + seed)
    bp_gen = pause_generator(backpressure, 20 + seed)
    for _ in range(3):
        next(bp_gen)    # out of step with the idle pattern when both are cyclic
    got = []
    dgot = []
    cycles = 0

    def put(group):
        values, count, k, last, tail, v2 = group
        dut.i__payload.value = (sum(v << (32 * j) for j, v in enumerate(values))
                                | (count << 256) | (last << 260) | (tail << 261))
        dut.k.value = k
        dut.v2.value = v2

    def scramble():
        # k and v2 are only sampled with a group; scramble them between groups.
        dut.k.value = random.Random(cycles).randint(0, 127)
        dut.v2.value = cycles & 1

    async def side_port():
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            if dut.d_valid.value:
                dgot.append((_masked(int(dut.d_data.value), int(dut.d_mask.value)),
                             int(dut.d_first.value), int(dut.d_last.value)))

    src = StreamSource(dut.clk, dut.i__valid, dut.i__ready, put, idle_gen, on_idle=scramble)
    sink = port_sink(dut, "o", pause=bp_gen, on_item=lambda p: got.append(
        (p & ((1 << 272) - 1), (p >> 272) & 0x3F, p >> 278)))
    tasks = [cocotb.start_soon(t) for t in (side_port(), sink.run(), src.send(groups))]
    while len(got) < len(want):
        await RisingEdge(dut.clk)
        cycles += 1
        assert cycles < 20 * GROUPS + 100, f"stuck: {len(got)} of {len(want)} groups out"
    await RisingEdge(dut.clk)
    await ReadOnly()            # the side port's last group is seen in this clock
    for t in tasks[1:]:
        t.cancel()
    # Nothing more may come out (no duplicated group).
    for _ in range(10):
        await RisingEdge(dut.clk)
        dut.i__valid.value = 0
        dut.o__ready.value = 1
        await ReadOnly()
        assert not dut.o__valid.value, "an extra group came out"
    tasks[0].cancel()
    assert len(dgot) == len(want), f"{len(dgot)} decoded groups for {len(want)} groups"
    for i, ((data, length, last), (dec, first, dlast), (enc, dec_want, last_want)) in \
            enumerate(zip(got, dgot, want)):
        values, count, k, _, tail, v2 = groups[i]
        ctx = f"group {i} (v2={v2} k={k}, count={count}, tail={tail}, values={[hex(v) for v in values]})"
        assert length == len(enc), f"{ctx}: length {length}, want {len(enc)}"
        assert data.to_bytes(34, "little")[:length] == enc, (
            f"{ctx}: data {data.to_bytes(34, 'little')[:length].hex()}, want {enc.hex()}")
        if not tail:
            # (with a tail, up to 4 - tail bytes of its slot may follow: not part of it)
            assert data >> (8 * length) == 0, f"{ctx}: bytes past length are not zero"
        assert dec == dec_want, f"{ctx}: decoded {dec.hex()}, want {dec_want.hex()}"
        assert last == last_want, f"{ctx}: last {last}, want {last_want}"
        assert dlast == last_want, f"{ctx}: decoded last {dlast}, want {last_want}"
        first_want = int(i == 0 or bool(groups[i - 1][3]))
        assert first == first_want, f"{ctx}: decoded first {first}, want {first_want}"
    if idle == "none" and backpressure == "none":
        # One group per clock plus the pipeline latency.
        assert cycles <= GROUPS + 5 + 2, f"{GROUPS} groups took {cycles} cycles"


def test_compression_unit():
    harness.run(_design, DUT, "inceptionn.sim.test_compression_unit")
