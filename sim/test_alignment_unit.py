"""AlignmentUnit: packets of random byte vectors (0..34 bytes, zero-length ones and
zero-length last ones included) under every idle x backpressure pattern, against
golden.alignment_unit beat for beat (data, keep, last); some packets start with a fill
vector (a 4-byte word repeated, the rest of the data garbage); plus a throughput check.
Run twice: with ``clear_stale=False`` (as the compression engine uses it: only bytes
within keep are compared; `make test`) and as built by default (bytes past keep are
zeros; a second build, `make sim-stress`)."""

import os
import random

import cocotb
import pytest
from cocotb.triggers import ReadOnly, RisingEdge

from inceptionn import golden
from inceptionn.rtl import harness
from inceptionn.sim.axis import (PAUSE_MODES, pause_generator, port_sink, port_source, start,
                                 stress)

# make test runs the engines' testbenches, which hold this stage (every frame against
# golden); this one runs in make sim and make test-long (which CI runs after make
# test), so that make test keeps within its 8 minutes on a fresh 2-core machine.
pytestmark = pytest.mark.long

DUT = "alignment_unit"
VEC = 34
# Whether the design under test zeroes the bytes past keep (set by the pytest entry).
CLEAR_STALE = os.environ.get("AU_CLEAR_STALE", "1") != "0"


def _design():
    from inceptionn.hw.alignment_unit import AlignmentUnit
    return AlignmentUnit()


def _design_keep_only():
    from inceptionn.hw.alignment_unit import AlignmentUnit
    return AlignmentUnit(clear_stale=False)


class _Fill(bytes):
    """A fill vector: its bytes are ``word`` repeated; only ``word`` is driven."""

    def __new__(cls, word, length):
        obj = super().__new__(cls, (word * 9)[:length])
        obj.word = word
        return obj


def _packets(seed, count):
    rng = random.Random(seed)
    packets = []
    for _ in range(count):
        style = rng.random()
        n = rng.choice((1, 1, 2, 3, 5, 8, 20))
        if style < 0.2:
            lengths = [rng.choice((0, 32, 33, VEC)) for _ in range(n)]
        elif style < 0.3:
            lengths = [32] * n                      # totals that are multiples of 32
        else:
            lengths = [rng.randint(0, VEC) for _ in range(n)]
        if rng.random() < 0.2:
            lengths.append(0)                       # a zero-length last vector
        vectors = [rng.randbytes(n) for n in lengths]
        if rng.random() < 0.3:
            vectors.insert(0, _Fill(rng.randbytes(4), rng.randint(0, VEC)))
        packets.append(vectors)
    # A packet of nothing at all gives no beat; put one between two real ones.
    packets.insert(count // 2, [b"", b""])
    packets.insert(count // 2, [b""])
    return packets


def _expected(packets):
    beats = []
    for vectors in packets:
        if sum(map(len, vectors)):
            beats += [(int.from_bytes(d, "little"), keep, int(last))
                      for d, keep, last in golden.alignment_unit(vectors)]
    return beats


async def _run(dut, packets, idle, backpressure, seed):
    """Drives the vectors and collects the beats; returns (beats, cycles)."""
    await start(dut, {"i__valid": 0, "o__ready": 0})

    rng = random.Random(seed)
    want = _expected(packets)
    idle_gen = pause_generator(idle, 30 + seed)
    bp_gen = pause_generator(backpressure, 40 + seed)
    for _ in range(3):
        next(bp_gen)    # out of step with the idle pattern when both are cyclic

    def vector(v, last):
        # Garbage past the valid bytes (a fill vector's word) must be ignored: new
        # garbage on every clock the vector waits.
        fill = isinstance(v, _Fill)
        head = v.word if fill else v
        data = int.from_bytes(head + rng.randbytes(VEC - len(head)), "little")
        return data | (len(v) << (8 * VEC)) | (last << (8 * VEC + 6)) | (fill << (8 * VEC + 7))

    vectors = [(lambda v=v, last=int(j == len(p) - 1): vector(v, last))
               for p in packets for j, v in enumerate(p)]
    got = []
    sink = port_sink(dut, "o", pause=bp_gen, on_item=lambda p: got.append(
        (p & ((1 << 256) - 1), (p >> 256) & 0xFFFFFFFF, (p >> 288) & 1, (p >> 289) & 1)))
    src = port_source(dut, "i", pause=idle_gen)
    tasks = [cocotb.start_soon(sink.run()), cocotb.start_soon(src.send(vectors))]
    limit = 10 * (len(vectors) + len(want)) + 1000
    cycles = 0
    while len(got) < len(want) or not tasks[1].done():
        await RisingEdge(dut.clk)
        cycles += 1
        assert cycles < limit, f"stuck: {len(got)} of {len(want)} beats out"
    tasks[0].cancel()
    # Nothing more may come out.
    for _ in range(8):
        await RisingEdge(dut.clk)
        dut.o__ready.value = 1
        await ReadOnly()
        assert not dut.o__valid.value, "an extra beat came out"

    assert len(got) == len(want), f"{len(got)} beats, want {len(want)}"
    for i, ((data, keep, last, user), (wdata, wkeep, wlast)) in enumerate(zip(got, want)):
        assert (keep, last, user) == (wkeep, wlast, 0), (
            f"beat {i}: keep {keep:#010x} last {last} user {user}, want keep {wkeep:#010x} "
            f"last {wlast} user 0")
        if not CLEAR_STALE:
            data &= int.from_bytes(b"".join(b"\xff" if keep >> n & 1 else b"\0"
                                            for n in range(32)), "little")
        assert data == wdata, f"beat {i}: data {data:#066x}, want {wdata:#066x}"
    return got, cycles


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, backpressure=PAUSE_MODES)
async def random_packets(dut, idle, backpressure):
    seed = PAUSE_MODES.index(idle) * 3 + PAUSE_MODES.index(backpressure)
    await _run(dut, _packets(seed, 200), idle, backpressure, seed)


@cocotb.test()
async def full_rate(dut):
    # One packet of 32-byte vectors and one of random 0..32-byte vectors, back to back:
    # one vector in and one beat out per clock, apart from a few clocks of latency.
    rng = random.Random(99)
    packets = [[rng.randbytes(32) for _ in range(200)],
               [rng.randbytes(rng.randint(0, 32)) for _ in range(200)]]
    vectors = sum(len(p) for p in packets)
    beats, cycles = await _run(dut, packets, "none", "none", 99)
    assert len(beats) == 200 + -(-sum(map(len, packets[1])) // 32)
    assert cycles <= vectors + 8, f"{vectors} vectors took {cycles} clocks"


@pytest.mark.skipif(not stress(), reason="the default build (bytes past keep zeroed), which "
                    "no engine uses: make sim-stress; make test runs the engine's build")
def test_alignment_unit():
    harness.run(_design, DUT, "inceptionn.sim.test_alignment_unit")


def test_alignment_unit_keep_only():
    harness.run(_design_keep_only, DUT + "_keep_only", "inceptionn.sim.test_alignment_unit",
                env={"AU_CLEAR_STALE": 0})
