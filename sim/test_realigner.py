"""Realigner: random frames and per-frame (skip, insert, length) against a byte model,
under the idle x backpressure matrix."""

import random

import cocotb
from cocotb.triggers import RisingEdge

from inceptionn.rtl import harness
from inceptionn.sim.axis import (Clock, PAUSE_MODES, frame_to_beats, pause_generator, port_sink,
                                 port_source)

import pytest

# make test runs the engines' testbenches, which hold this stage (every frame against
# golden); this one runs in make sim and make test-long (which CI runs after make
# test), so that make test keeps within its 8 minutes on a fresh 2-core machine.
pytestmark = pytest.mark.long

DUT = "realigner"


def _design():
    from inceptionn.hw.realigner import Realigner
    return Realigner()


def model(frame, skip, insert, length):
    """Output bytes per the Realigner's docstring: out[j] = in[j + skip - insert]."""
    d = skip - insert
    stream = bytes(-d) + frame if d < 0 else frame[d:]
    return stream[:length]


def _jobs(seed, count):
    rng = random.Random(seed)
    jobs = []
    edge_skips = [0, 1, 31, 32, 33, 42, 54, 58, 66, 138, 255]
    for n in range(count):
        flen = rng.choice([1, 2, 31, 32, 33, 63, 64, 65, 100, 200, 300, rng.randrange(1, 400)])
        frame = rng.randbytes(flen)
        skip = rng.choice(edge_skips + [rng.randrange(0, 256)])
        insert = rng.choice([0, 0, 1, 5, 31, rng.randrange(0, 32)])
        length = rng.choice([0, 1, 4, 32, 33, 64, rng.randrange(0, 400), 65535])
        jobs.append((frame, skip, insert, length, rng.random() < 0.2))
    return jobs


def _beats(jobs):
    """The frames' beats as the input port's payloads."""
    return [data | (keep << 256) | (last << 288) | (usr << 289)
            for frame, *_, user in jobs for data, keep, last, usr in frame_to_beats(frame, user)]


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, backpressure=PAUSE_MODES)
async def realign_matrix(dut, idle, backpressure):
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.i__valid.value = 0
    dut.cfg__valid.value = 0
    dut.o__ready.value = 0
    dut.rst.value = 1
    for _ in range(2):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    jobs = _jobs(hash((idle, backpressure)) & 0xFFFF, 150)

    cfg = port_source(dut, "cfg")
    src = port_source(dut, "i", pause=pause_generator(idle, 1))
    got = []
    cur = bytearray()
    beats = []

    def take(p):
        data, keep = p & ((1 << 256) - 1), (p >> 256) & 0xFFFFFFFF
        last, user = (p >> 288) & 1, (p >> 289) & 1
        n = bin(keep).count("1")
        assert keep == (1 << n) - 1, f"keep {keep:#x} not contiguous"
        assert data >> (8 * n) == 0, "bytes past keep must be zero"
        beats.append(n)
        cur.extend(data.to_bytes(32, "little")[:n])
        if last:
            got.append((bytes(cur), bool(user), list(beats)))
            cur.clear()
            beats.clear()

    sink = port_sink(dut, "o", pause=pause_generator(backpressure, 2), on_item=take)
    cocotb.start_soon(cfg.send(skip | (insert << 8) | (length << 13)
                               for _, skip, insert, length, _ in jobs))
    cocotb.start_soon(src.send(_beats(jobs)))
    cocotb.start_soon(sink.run())
    waited = 0
    while len(got) < len(jobs):
        await RisingEdge(dut.clk)
        waited += 1
        assert waited < 100_000, f"stuck after {len(got)} of {len(jobs)} frames"
    for idx, ((frame, skip, insert, length, user), (out, out_user, nbytes)) in enumerate(zip(jobs, got)):
        want = model(frame, skip, insert, length)
        note = f"frame {idx}: len {len(frame)} skip {skip} insert {insert} length {length}"
        assert out == want, note
        if want:
            assert all(n == 32 for n in nbytes[:-1]) and nbytes[-1] > 0, note
            assert len(nbytes) == -(-len(want) // 32), note
        else:
            assert nbytes == [0], note
        # user passes when the output's last beat is made at or after the input's last
        # beat: output beat t comes with input beat t + D + 1 (D = (skip - insert) // 32).
        t_final = max(1, -(-len(want) // 32)) - 1
        reaches_end = t_final + (skip - insert) // 32 + 1 >= -(-len(frame) // 32) - 1
        assert out_user == (user and reaches_end), note


@cocotb.test()
async def back_to_back_throughput(dut):
    """Payload extraction at P = 42 / 54 / 66 keeps one beat per clock per input beat."""
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.rst.value = 1
    dut.i__valid.value = 0
    dut.cfg__valid.value = 0
    dut.o__ready.value = 1
    for _ in range(2):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    rng = random.Random(5)
    jobs = [(rng.randbytes(1514), p, 1514 - p) for p in (42, 54, 66, 42, 54, 66)]
    beats = [b for f, _, _ in jobs for b in frame_to_beats(f)]
    cycles = 0
    accepted = []

    async def count():
        nonlocal cycles
        while True:
            await RisingEdge(dut.clk)
            cycles += 1

    cocotb.start_soon(count())
    cocotb.start_soon(port_source(dut, "cfg").send(p | (n << 13) for _, p, n in jobs))
    await port_source(dut, "i", on_taken=lambda _: accepted.append(cycles)).send(
        d | (k << 256) | (last << 288) for d, k, last, _ in beats)
    # Steady state (after the first frame, which waits for the first cfg to load).
    first = len(frame_to_beats(jobs[0][0]))
    span = accepted[-1] - accepted[first] + 1
    assert span == len(beats) - first, f"{len(beats) - first} beats took {span} cycles"


def test_realigner():
    harness.run(_design, DUT, "inceptionn.sim.test_realigner")
