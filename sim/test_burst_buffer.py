"""BurstBuffer: payloads cut into random pieces go in, a consumer takes random group
sizes (0..34 bytes) out; the byte stream must come out intact, payload by payload.

Every clock the testbench checks the window against the stream (bytes past the
level read as 0), that ``avail``/``level``/``drained``/``tag_bytes`` tell the truth,
that consuming past the end of a drained payload empties the buffer, and that a
flush mid-payload drops exactly the rest of that payload. Input idle and consumer
stalls run through the pause matrix.
"""

import random

import cocotb
from cocotb.triggers import FallingEdge, RisingEdge

from inceptionn.sim import harness
from inceptionn.sim.axis import Clock, PAUSE_MODES, pause_generator

DUT = "burst_buffer"
WINDOW = 34
CAPACITY = 95
WIDTH = (0, 1, 2, 4)


def tag_bytes(b0, b1):
    return sum(WIDTH[(b >> (2 * i)) & 3] for b in (b0, b1) for i in range(4))


def _design():
    from inceptionn.hw.burst_buffer import BurstBuffer
    return BurstBuffer()


def pieces_of(payload, rng):
    out, pos = [], 0
    while pos < len(payload) or not out:
        if rng.random() < 0.5:
            first, count = 0, 32                    # a full beat
        else:
            first = rng.randrange(32)
            count = rng.randint(0, 32 - first)
        count = min(count, len(payload) - pos)
        data = bytearray(rng.randbytes(32))         # garbage around the valid bytes
        data[first:first + count] = payload[pos:pos + count]
        out.append([int.from_bytes(data, "little"), first, count, False])
        pos += count
    if rng.random() < 0.2:
        out.append([rng.getrandbits(256), rng.randrange(32), 0, False])
    out[-1][3] = True
    return out


def group_size(rng):
    r = rng.random()
    if r < 0.1:
        return 0
    if r < 0.2:
        return 34
    return rng.randint(2, 34)


async def run(dut, payloads, idle, stall, seed, flush_rate=0.0):
    """Feed the payloads, consume them; returns the payloads as the consumer saw them
    (cut short where it flushed early)."""
    rng = random.Random(seed)
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.rst.value = 1
    dut.i__valid.value = 0
    dut.consume.value = 0
    dut.go.value = 0
    dut.flush.value = 0
    for _ in range(2):
        await RisingEdge(dut.clk)
    dut.rst.value = 0

    pieces = [p for pl in payloads for p in pieces_of(pl, rng)]
    idle_p, stall_p = pause_generator(idle, seed + 1), pause_generator(stall, seed + 2)
    pi = 0
    seen = []                  # what the consumer took from each payload
    cur = bytearray()
    pl = 0                     # payload being consumed
    pos = 0                    # read position in it
    cycles = 0
    limit = 100 + 6 * sum(len(p) for p in payloads) + 40 * len(pieces)
    while pl < len(payloads):
        await FallingEdge(dut.clk)
        cycles += 1
        assert cycles < limit, f"stuck: payload {pl}, position {pos}, piece {pi}"
        window = int(dut.window.value).to_bytes(WINDOW, "little")
        avail, level, drained = int(dut.avail.value), int(dut.level.value), bool(dut.drained.value)
        want = payloads[pl]
        assert level <= CAPACITY and avail == min(level, WINDOW)
        assert pos + level <= len(want), f"payload {pl}: {level} bytes held at {pos} of {len(want)}"
        assert window[:avail] == want[pos:pos + avail], f"payload {pl}: window wrong at {pos}"
        assert window[avail:] == bytes(WINDOW - avail), "bytes past the level are not zero"
        if drained:
            assert pos + level == len(want), f"payload {pl}: drained with {len(want) - pos - level} bytes missing"
        assert int(dut.tag_bytes.value) == tag_bytes(window[0], window[1])

        # Consumer: a group of random size when it is all there (or all that is left).
        consume, flush = 0, False
        if not next(stall_p):
            g = group_size(rng)
            if drained and pos + avail == len(want) and g >= avail:
                # Done with this payload; sometimes read past its end first.
                consume = g if rng.random() < 0.5 else avail
                flush = rng.random() < 0.7 or consume == 0
            elif g <= avail:
                consume = g
            # Only once this payload shows (a flush while the buffer still drops the
            # previous payload's rest has no effect, by contract).
            if not flush and avail > consume and rng.random() < flush_rate:
                flush = True       # give up on the rest of this payload
        if consume == 0 and rng.random() < 0.5:
            dut.consume.value = rng.randint(0, 34)    # ignored: go is low
            dut.go.value = 0
        else:
            dut.consume.value = consume
            dut.go.value = 1
        dut.flush.value = int(flush)
        cur += want[pos:pos + consume]
        if flush:
            seen.append(bytes(cur))
            cur = bytearray()
            pl += 1
            pos = 0
        else:
            pos = min(pos + consume, len(want))

        # Producer: i.ready is a flip-flop, so what it shows now holds at the edge.
        if pi < len(pieces) and not next(idle_p):
            data, first, count, last = pieces[pi]
            dut.i__payload.value = data | (first << 256) | (count << 261) | (int(last) << 267)
            dut.i__valid.value = 1
            if dut.i__ready.value:
                pi += 1
        else:
            dut.i__valid.value = 0
    await FallingEdge(dut.clk)
    dut.consume.value = 0
    dut.go.value = 0
    dut.flush.value = 0
    dut.i__valid.value = 0
    return seen


def make_payloads(rng, count):
    sizes = [0, 1, 2, 31, 32, 33, 34, 64, 65, 66, 67, 1448]
    return [rng.randbytes(rng.choice(sizes) if rng.random() < 0.3 else rng.randint(0, 300))
            for _ in range(count)]


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, stall=PAUSE_MODES)
async def stream_intact(dut, idle, stall):
    rng = random.Random(f"{idle}{stall}")
    payloads = make_payloads(rng, 40)
    seen = await run(dut, payloads, idle, stall, seed=rng.randrange(1000))
    assert seen == payloads


@cocotb.test()
async def flush_mid_payload(dut):
    """A consumer that flushes early gets the next payload from its first byte."""
    rng = random.Random(7)
    payloads = make_payloads(rng, 80)
    seen = await run(dut, payloads, "random", "random", seed=3, flush_rate=0.05)
    assert len(seen) == len(payloads)
    for got, want in zip(seen, payloads):
        assert want.startswith(got)
    assert sum(len(g) < len(w) for g, w in zip(seen, payloads)) > 5, "too few early flushes"


@cocotb.test()
async def full_rate(dut):
    """Full beats in, 32 bytes out every clock: the buffer must keep up with the input."""
    rng = random.Random(9)
    payload = rng.randbytes(32 * 200)
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.rst.value = 1
    dut.consume.value = 0
    dut.go.value = 0
    dut.flush.value = 0
    dut.i__valid.value = 0
    for _ in range(2):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    pos, taken, pi = 0, bytearray(), 0
    busy = 0
    while pos < len(payload):
        await FallingEdge(dut.clk)
        avail = int(dut.avail.value)
        c = 32 if avail >= 32 else (avail if dut.drained.value else 0)
        window = int(dut.window.value).to_bytes(WINDOW, "little")
        taken += window[:c]
        pos += c
        busy += c == 32
        dut.consume.value = c
        dut.go.value = 1
        dut.flush.value = int(pos == len(payload))
        if pi < 200:
            chunk = payload[32 * pi:32 * pi + 32]
            dut.i__payload.value = (int.from_bytes(chunk, "little") | (32 << 261)
                                    | (int(pi == 199) << 267))
            dut.i__valid.value = 1
            if dut.i__ready.value:
                pi += 1
        else:
            dut.i__valid.value = 0
    assert bytes(taken) == payload
    assert busy >= 198, f"only {busy} of 200 clocks moved 32 bytes"


def test_burst_buffer():
    harness.run(_design, DUT, "inceptionn.sim.test_burst_buffer")
