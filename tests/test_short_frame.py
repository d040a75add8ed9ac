"""The one-beat TX engine (hw/short_frame.py) against golden's TX, in Amaranth's
simulator at 512 bits: every frame of one beat that it takes, under the configurations
that change what TX does (codec, wire version, k, DSCP, enable), with random idle and
backpressure, byte for byte and counter for counter; and its rate (a frame a clock)."""

import random

import numpy as np
import pytest
from amaranth import Module, Signal
from amaranth.sim import Simulator

from inceptionn.golden import Counters
from inceptionn.hw.short_frame import ShortFrameEngine, tx_short_takes
from inceptionn.rtl import frame_builders as F
from inceptionn.rtl import rtl_golden

BEAT = 64
# (enable, dscp, k, codec port, version port)
CONFIGS = [(1, 10, 10, 1, 3), (1, 10, 4, 1, 2), (1, 10, 10, 0, 1), (1, 10, 100, 0, 3),
           (1, 10, 16, 1, 3), (0, 10, 10, 1, 3), (1, 12, 10, 1, 3), (1, 10, 17, 1, 3),
           (1, 10, 10, 1, 1)]
COUNTERS = ("frames_in", "frames_out", "compressed", "version1", "version2", "version3",
            "bypassed", "fallback", "dropped", "payload_bytes_in", "payload_bytes_out")


def _payload(rng, n):
    kind = rng.random()
    if kind < 0.65:         # gradients, at scales from mostly zero tags to 2-byte fields
        scale = 10 ** rng.uniform(-6, -2)
        vals = np.asarray([rng.gauss(0, scale) for _ in range((n + 3) // 4)])
        return F.float_payload(vals)[:n]
    if kind < 0.75:
        return F.incompressible_payload(n, rng.randrange(1 << 30))
    if kind < 0.85:
        return F.special_payload()[rng.randrange(40):][:n].ljust(n, b"\0")
    return rng.randbytes(n)


def _frame(rng):
    """A one-beat frame of a shape the engine takes, eligible or refused for one reason."""
    tcp, vlan = rng.random() < 0.35, (rng.randrange(4096) if rng.random() < 0.3 else None)
    room = BEAT - (14 + 4 * (vlan is not None) + 20 + (20 if tcp else 8))
    n = rng.randrange(0, room + 1) if rng.random() < 0.3 else max(0, room - rng.randrange(6))
    tos = rng.choice([0x28, 0x28, 0x28, 0x28, 0x2B, 0x2C, 0x00])
    pad = rng.choice([0, 0, 60, BEAT])
    if tcp:
        f = F.tcp_frame(_payload(rng, n), tos=tos, vlan=vlan, seq=rng.randrange(1 << 32),
                        pad_to=pad)
    else:
        f = F.udp_frame(_payload(rng, n), tos=tos, vlan=vlan, checksum=rng.random() < 0.8,
                        sport=rng.randrange(1 << 16), pad_to=pad)
    f = bytearray(f[:BEAT])
    l3 = 18 if vlan is not None else 14
    damage = rng.random()
    if damage < 0.05:                    # a lying IP total length
        f[l3 + 3] = (f[l3 + 3] + rng.choice([1, 2, 30])) & 0xFF
    elif damage < 0.08 and not tcp:      # a UDP length that disagrees
        f[l3 + 25] ^= 1
    elif damage < 0.11:                  # a fragment
        f[l3 + 6] |= 0x20
    elif damage < 0.13:                  # cut short
        f = f[:rng.randrange(20, len(f))]
    return bytes(f)


def _golden(frame, user, cfg, counters):
    enable, dscp, k, codec, version = cfg
    return rtl_golden.tx_frame(frame, enable=bool(enable), dscp=dscp, k=k, tuser=user,
                               counters=counters, codec="bounded" if codec else "paper",
                               version=version)


def _run(items, seed, idle=0.3, ready=0.7):
    """``items``: (frame, user, cfg); returns [(bytes, user)] out and the counters."""
    rng = random.Random(seed)
    dut = ShortFrameEngine()
    out, counts = [], {}

    async def source(ctx):
        for frame, user, cfg in items:
            while rng.random() < idle:
                ctx.set(dut.i.valid, 0)
                await ctx.tick()
            # Bytes past the frame's end are whatever the bus holds.
            beat = frame + bytes([0xA5]) * (BEAT - len(frame))
            ctx.set(dut.i.payload, {"data": int.from_bytes(beat, "little"),
                                    "keep": (1 << len(frame)) - 1, "last": 1, "user": user})
            for name, value in zip(("enable", "dscp", "k", "codec", "version"), cfg):
                ctx.set(getattr(dut, name), value)
            ctx.set(dut.i.valid, 1)
            await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)

    async def sink(ctx):
        # A lost frame must fail the test, not hang it: a bound on the clocks.
        for _ in range(int(len(items) * (4 / ready + 4)) + 100):
            if len(out) == len(items):
                break
            ctx.set(dut.o.ready, rng.random() < ready)
            _, _, valid, rdy, p = await ctx.tick().sample(dut.o.valid, dut.o.ready, dut.o.payload)
            if valid and rdy:
                keep = p.keep
                n = keep.bit_length()
                assert keep == (1 << n) - 1 and p.last
                out.append((p.data.to_bytes(BEAT, "little")[:n], p.user))
        for _ in range(4):
            await ctx.tick()
        for name in COUNTERS:
            counts[name] = ctx.get(getattr(dut, name))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(source)
    sim.add_testbench(sink)
    sim.run()
    return out, counts


def test_takes_only_its_shapes():
    m = Module()
    beat, out = Signal(8 * BEAT), Signal()
    m.d.comb += out.eq(tx_short_takes(beat))
    pay = bytes(8)
    cases = [(F.udp_frame(pay), 1), (F.udp_frame(pay, vlan=3), 1), (F.tcp_frame(pay), 1),
             (F.tcp_frame(pay, vlan=3), 1), (F.udp_frame(pay, tos=0), 1),
             (F.udp_frame(pay, ip_options=bytes(4)), 0),
             (F.tcp_frame(pay, tcp_options=[("NOP", None)] * 4), 0),
             (F.ipv4_frame(pay), 0), (F.arp_frame(), 0), (F.ipv6_frame(pay), 0)]
    got = []

    async def bench(ctx):
        for f, _ in cases:
            ctx.set(beat, int.from_bytes(f[:BEAT].ljust(BEAT, b"\0"), "little"))
            got.append(ctx.get(out))
    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert got == [w for _, w in cases]


@pytest.mark.parametrize("seed,ready", [(1, 0.7), (2, 0.25)])
def test_matches_golden_tx(seed, ready):
    """(ready 0.25: the sink slower than the source, so the credits run out and the
    input waits; a frame written to a full FIFO would be lost.)"""
    rng = random.Random(seed)
    items = []
    for _ in range(200):
        frame = _frame(rng)
        items.append((frame, int(rng.random() < 0.04), rng.choice(CONFIGS)))
    out, counts = _run(items, seed, ready=ready)
    assert len(out) == len(items), f"{len(items) - len(out)} frames never came out"
    want = Counters()
    kinds = Counters()
    for j, (frame, user, cfg) in enumerate(items):
        before = (want.compressed, want.fallback)
        g = _golden(frame, user, cfg, want)
        assert out[j][0] == g, f"frame {j} ({cfg}, user {user}): {out[j][0].hex()} != {g.hex()}"
        assert out[j][1] == (user and g == frame), f"frame {j}: tuser"
        kinds.compressed += want.compressed > before[0]
        kinds.fallback += want.fallback > before[1]
    for name in COUNTERS:
        assert counts[name] == getattr(want, name), name
    # The run had frames of each kind to check.
    assert kinds.compressed > 20 and kinds.fallback > 5 and want.bypassed > 20


def test_a_frame_a_clock():
    """Back to back with the sink always ready: N frames in N + latency clocks."""
    rng = random.Random(7)
    items = [(F.udp_frame(F.float_payload([rng.gauss(0, 1e-3) for _ in range(5)]) + b"xy"),
              0, CONFIGS[0]) for _ in range(64)]
    dut = ShortFrameEngine()
    clocks = {}

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        ctx.set(dut.i.valid, 1)
        first = None
        sent = taken = 0
        clock = 0
        while taken < len(items):
            if sent < len(items):
                f = items[sent][0]
                ctx.set(dut.i.payload, {"data": int.from_bytes(f, "little"),
                                        "keep": (1 << len(f)) - 1, "last": 1, "user": 0})
            else:
                ctx.set(dut.i.valid, 0)
            _, _, iv, ir, ov = await ctx.tick().sample(dut.i.valid, dut.i.ready, dut.o.valid)
            clock += 1
            sent += iv and ir
            if ov:
                first = clock if first is None else first
                taken += 1
        clocks["out"] = clock - first + 1
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert clocks["out"] == len(items)
