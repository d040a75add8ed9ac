"""BurstBuffer: payloads cut into random pieces go in, a consumer takes group after
group out (each group as long as its tag word says); the byte stream must come out
intact, payload by payload.

Every clock the testbench checks the window against the stream (bytes past the
level read as 0), that ``level``/``last`` tell the truth, and, whenever the length is
``known``, that ``length``/``tag_bytes``/``fits`` match the tag word at byte 0; that
going past the end of a payload whose last piece is in empties the buffer (zeros), and
that a flush mid-payload drops exactly the rest of that payload. Input idle and
consumer stalls run through the pause matrix; a full-rate test checks one group per
clock from full beats.
"""

import random

import cocotb
from cocotb.triggers import FallingEdge, RisingEdge

from inceptionn.sim import harness
from inceptionn.sim.axis import Clock, PAUSE_MODES, pause_generator

DUT = "burst_buffer"
WINDOW = 37
CAPACITY = 72
WIDTH = (0, 1, 2, 4)


def group_length(b0, b1):
    return 2 + sum(WIDTH[(b >> (2 * i)) & 3] for b in (b0, b1) for i in range(4))


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


async def _reset(dut):
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.rst.value = 1
    dut.i__valid.value = 0
    dut.go.value = 0
    dut.flush.value = 0
    for _ in range(2):
        await RisingEdge(dut.clk)
    dut.rst.value = 0


async def run(dut, payloads, idle, stall, seed, flush_rate=0.0):
    """Feed the payloads, consume them group by group; returns the payloads as the
    consumer saw them (cut short where it flushed early) and the number of groups
    that went while only partly held (read past the end)."""
    rng = random.Random(seed)
    await _reset(dut)
    pieces = [p for pl in payloads for p in pieces_of(pl, rng)]
    idle_p, stall_p = pause_generator(idle, seed + 1), pause_generator(stall, seed + 2)
    pi = 0
    seen = []                  # what the consumer took from each payload
    cur = bytearray()
    pl = 0                     # payload being consumed
    pos = 0                    # read position in it
    past_end = 0
    cycles = 0
    limit = 100 + 6 * sum(len(p) for p in payloads) + 40 * len(pieces)
    while pl < len(payloads):
        await FallingEdge(dut.clk)
        cycles += 1
        assert cycles < limit, f"stuck: payload {pl}, position {pos}, piece {pi}"
        window = int(dut.window.value).to_bytes(WINDOW, "little")
        level, last = int(dut.level.value), bool(dut.last.value)
        known, ready = bool(dut.known.value), bool(dut.ready.value)
        want = payloads[pl]
        avail = min(level, WINDOW)
        assert level <= CAPACITY
        assert pos + level <= len(want), f"payload {pl}: {level} bytes held at {pos} of {len(want)}"
        assert window[:avail] == want[pos:pos + avail], f"payload {pl}: window wrong at {pos}"
        assert window[avail:] == bytes(WINDOW - avail), "bytes past the level are not zero"
        if last:
            assert pos + level == len(want), f"payload {pl}: last with {len(want) - pos - level} bytes missing"
        assert not ready or known
        length = group_length(window[0], window[1])
        if known:
            assert int(dut.length.value) == length, f"payload {pl}: length wrong at {pos}"
            assert int(dut.tag_bytes.value) == length - 2
            assert bool(dut.fits.value) == (level >= length)

        # Consumer: the group at byte 0 when it is all there (or all that is left).
        go, flush = False, False
        if not next(stall_p):
            if last and level == 0:
                flush = True                    # done with this payload
            elif ready and (level >= length or last):
                go = True
                if last and level <= length and rng.random() < 0.7:
                    flush = True                # the final group: go and flush at once
            # Only once this payload shows (a flush while the buffer still drops the
            # previous payload's rest has no effect, by contract).
            if not flush and level > (length if go else 0) and rng.random() < flush_rate:
                flush = True       # give up on the rest of this payload
        if not go and rng.random() < 0.3 and not ready:
            dut.go.value = 1                    # ignored: not ready
        else:
            dut.go.value = int(go)
        dut.flush.value = int(flush)
        if go:
            past_end += level < length
            cur += want[pos:pos + length]
            pos = min(pos + length, len(want))
        if flush:
            seen.append(bytes(cur))
            cur = bytearray()
            pl += 1
            pos = 0

        # Producer: i.ready is a flip-flop, so what it shows now holds at the edge.
        if pi < len(pieces) and not next(idle_p):
            data, first, count, plast = pieces[pi]
            dut.i__payload.value = data | (first << 256) | (count << 261) | (int(plast) << 267)
            dut.i__valid.value = 1
            if dut.i__ready.value:
                pi += 1
        else:
            dut.i__valid.value = 0
    await FallingEdge(dut.clk)
    dut.go.value = 0
    dut.flush.value = 0
    dut.i__valid.value = 0
    return seen, past_end


def make_payloads(rng, count):
    sizes = [0, 1, 2, 3, 31, 32, 33, 34, 35, 36, 37, 38, 64, 65, 66, 67, 1448]
    out = []
    for _ in range(count):
        n = rng.choice(sizes) if rng.random() < 0.3 else rng.randint(0, 300)
        kind = rng.random()
        if kind < 0.2:
            # Long groups: tag bytes with many raw (11) and 16-bit (10) fields.
            out.append(bytes(rng.choice([0xFF, 0xBF, 0xEF, 0xAA, 0xFB]) if rng.random() < 0.6
                             else rng.randrange(256) for _ in range(n)))
        elif kind < 0.3:
            out.append(bytes(n))                    # 2-byte groups of zero tags
        else:
            out.append(rng.randbytes(n))
    return out


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, stall=PAUSE_MODES)
async def stream_intact(dut, idle, stall):
    rng = random.Random(f"{idle}{stall}")
    payloads = make_payloads(rng, 40)
    seen, past_end = await run(dut, payloads, idle, stall, seed=rng.randrange(1000))
    assert seen == payloads
    assert past_end > 5, "too few groups read past the end of a payload"


@cocotb.test()
async def flush_mid_payload(dut):
    """A consumer that flushes early gets the next payload from its first byte."""
    rng = random.Random(7)
    payloads = make_payloads(rng, 80)
    seen, _ = await run(dut, payloads, "random", "random", seed=3, flush_rate=0.05)
    assert len(seen) == len(payloads)
    for got, want in zip(seen, payloads):
        assert want.startswith(got)
    assert sum(len(g) < len(w) for g, w in zip(seen, payloads)) > 5, "too few early flushes"


@cocotb.test()
@cocotb.parametrize(glen=(32, 34))
async def full_rate(dut, glen):
    """Full beats in, one group per clock out: with 32-byte groups the buffer must go
    every clock; with 34-byte groups the input (32 bytes a clock) is the limit."""
    # 32: seven raw values and one 16-bit one (tags FF BF); 34: eight raw values.
    group = (bytes([0xFF, 0xBF]) + bytes(range(30))) if glen == 32 else \
        (bytes([0xFF, 0xFF]) + bytes(range(32)))
    payload = group * 200
    beats = [payload[i:i + 32] for i in range(0, len(payload), 32)]
    await _reset(dut)
    pos, taken, pi = 0, bytearray(), 0
    go_cycles = []
    cycle = 0
    while pos < len(payload):
        await FallingEdge(dut.clk)
        cycle += 1
        assert cycle < 2000, "stuck"
        ready, level = bool(dut.ready.value), int(dut.level.value)
        go = ready and level >= glen
        if go:
            assert int(dut.length.value) == glen
            window = int(dut.window.value).to_bytes(WINDOW, "little")
            taken += window[:glen]
            pos += glen
            go_cycles.append(cycle)
        dut.go.value = int(go)
        dut.flush.value = int(pos == len(payload))
        if pi < len(beats):
            dut.i__payload.value = (int.from_bytes(beats[pi], "little") | (32 << 261)
                                    | (int(pi == len(beats) - 1) << 267))
            dut.i__valid.value = 1
            if dut.i__ready.value:
                pi += 1
        else:
            dut.i__valid.value = 0
    await FallingEdge(dut.clk)
    dut.go.value = 0
    dut.flush.value = 0
    assert bytes(taken) == payload
    rate = (len(go_cycles) - 1) / (go_cycles[-1] - go_cycles[0])
    dut._log.info(f"{glen}-byte groups: {rate:.3f} groups per clock")
    assert rate >= (0.99 if glen == 32 else 0.9 * 32 / 34), f"{rate:.3f} groups per clock"


def test_burst_buffer():
    harness.run(_design, DUT, "inceptionn.sim.test_burst_buffer")
