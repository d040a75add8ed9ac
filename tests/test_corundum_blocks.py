"""The app block's small parts in Amaranth's simulator (no engines, seconds): the width
adapters against a byte model with stalls on both sides, and the register file's
address windows for a second interface (the Verilator testbench has one)."""

import random

import pytest

from amaranth.sim import Simulator

from inceptionn.hw.corundum.regmap import APP_MAGIC, IF_STRIDE, interface_registers
from inceptionn.hw.corundum.regs import AxiLiteRegs
from inceptionn.hw.corundum.width import Downsizer, Upsizer


def _beats(frame, nbytes, side):
    out = []
    for off in range(0, len(frame), nbytes):
        chunk = frame[off:off + nbytes]
        out.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1,
                    int(off + nbytes >= len(frame)), side))
    return out


def _run_adapter(dut, in_bytes, out_bytes, frames, seed):
    rng = random.Random(seed)
    got = []

    async def source(ctx):
        for frame, bad, side in frames:
            beats = _beats(frame, in_bytes, side)
            for j, (data, keep, last, sd) in enumerate(beats):
                while rng.random() < 0.3:
                    ctx.set(dut.i.valid, 0)
                    await ctx.tick()
                ctx.set(dut.i.payload, {"data": data, "keep": keep, "last": last,
                                        "user": int(bad and last), "side": sd})
                ctx.set(dut.i.valid, 1)
                await ctx.tick().until(dut.i.ready)
            ctx.set(dut.i.valid, 0)

    async def sink(ctx):
        cur, user, sides = bytearray(), 0, set()
        while len(got) < len(frames):
            ready = rng.random() < 0.7
            ctx.set(dut.o.ready, ready)
            valid, p = ctx.get(dut.o.valid), ctx.get(dut.o.payload)   # before the edge
            await ctx.tick()
            if ready and valid:
                n = bin(p.keep).count("1")
                assert p.keep == (1 << n) - 1, "keep not a low mask"
                assert n == out_bytes or p.last, "a partial beat before the last"
                cur += p.data.to_bytes(out_bytes, "little")[:n]
                user |= p.user
                sides.add(p.side)
                if p.last:
                    got.append((bytes(cur), bool(user), sides))
                    cur, user, sides = bytearray(), 0, set()

    sim = Simulator(dut)
    sim.add_clock(4e-9)
    sim.add_testbench(source)
    sim.add_testbench(sink)
    sim.run_until(1e-3)
    assert len(got) == len(frames)
    for i, ((f, bad, side), (g, gbad, gsides)) in enumerate(zip(frames, got)):
        assert g == f, f"frame {i}: {len(g)} bytes, expected {len(f)}"
        assert gbad == bad and gsides == {side}, f"frame {i}: user/side-band"


def _frames(seed, n):
    rng = random.Random(seed)
    sizes = [1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1514] + [rng.randrange(1, 300)
                                                                       for _ in range(n)]
    return [(rng.randbytes(s), rng.random() < 0.2, rng.getrandbits(20)) for s in sizes]


def test_upsizer_64_to_256():
    _run_adapter(Upsizer(64, 256, 20), 8, 32, _frames(1, 10), 2)


def test_downsizer_256_to_64():
    _run_adapter(Downsizer(256, 64, 20), 32, 8, _frames(3, 10), 4)


def test_downsizer_512_to_256_and_back():
    _run_adapter(Downsizer(512, 256, 20), 64, 32, _frames(5, 10), 6)
    _run_adapter(Upsizer(256, 512, 20), 32, 64, _frames(7, 10), 8)


@pytest.mark.parametrize("kind,lanes", [("tx", "CompressionEngineLanes"),
                                         ("rx", "DecompressionEngineLanes")])
def test_the_100g_paths_hold_the_registrys_lanes(kind, lanes):
    """At 512 bits each path's engine is the lanes `make bench-hw` and the lanes'
    testbenches measure (each with its bypass lane, RX's lanes keeping a frame's
    configuration until their engine counted the frame), not lanes built apart."""
    from inceptionn.hw.lane_bypass import rx_sure_bypass, tx_sure_bypass
    from amaranth.hdl import Fragment
    from inceptionn.hw.corundum.engine_path import EnginePath
    path = EnginePath(kind, 512, 8)
    engine = {name: f for f, name, *_ in Fragment.get(path, None).subfragments}["engine"]
    built = [o for o in engine.origins if type(o).__name__ == lanes]
    assert built, [type(o).__name__ for o in engine.origins]
    assert built[0]._bypass is {"tx": tx_sure_bypass, "rx": rx_sure_bypass}[kind]
    assert built[0].until_counted == (kind == "rx")


def test_registers_of_a_second_interface():
    """Interface 1's core answers its own window only; interface 0's core answers the
    global words and every address no interface owns; a low word latches its high one."""
    from amaranth.lib.wiring import In
    from inceptionn.hw.corundum.engine_path import engine_ports
    from inceptionn.hw.corundum.regmap import ENGINES
    ports = {(d, n): (m.shape, m.init if m.flow == In else 0)
             for d, cls in ENGINES.items() for n, m in engine_ports(cls).items()}
    cores = [AxiLiteRegs(64, ports), AxiLiteRegs(64, ports)]
    from amaranth import Module
    top = Module()
    for i, c in enumerate(cores):
        top.submodules[f"c{i}"] = c
    regs = {r.name: r.offset for r in interface_registers(1)}
    log = []

    async def bench(ctx):
        for i, c in enumerate(cores):
            ctx.set(c.if_index, i)
            ctx.set(c.if_count, 2)
        ctx.set(cores[1].values[("tx", "payload_bytes_in")], 0x1234_5678_9ABC)

        async def read(addr):
            for c in cores:
                ctx.set(c.s_axil_araddr, addr)
                ctx.set(c.s_axil_arvalid, 1)
                ctx.set(c.s_axil_rready, 1)
            for _ in range(10):
                # sampled before the edge: the handshakes that edge completes
                taken = [ctx.get(c.s_axil_arready) for c in cores]
                answers = [(j, ctx.get(c.s_axil_rdata)) for j, c in enumerate(cores)
                           if ctx.get(c.s_axil_rvalid)]
                await ctx.tick()
                if any(taken):
                    assert sum(taken) == 1, f"{addr:#x}: two cores took the read"
                    for c in cores:
                        ctx.set(c.s_axil_arvalid, 0)
                if answers:
                    assert len(answers) == 1, f"{addr:#x}: two cores answered"
                    return answers[0]
            raise AssertionError(f"{addr:#x}: no answer")

        async def write(addr, value):
            for c in cores:
                ctx.set(c.s_axil_awaddr, addr)
                ctx.set(c.s_axil_awvalid, 1)
                ctx.set(c.s_axil_wdata, value)
                ctx.set(c.s_axil_wstrb, 0xF)
                ctx.set(c.s_axil_wvalid, 1)
                ctx.set(c.s_axil_bready, 1)
            for _ in range(5):
                taken = [ctx.get(c.s_axil_awready) & ctx.get(c.s_axil_wready) for c in cores]
                await ctx.tick()
                if any(taken):
                    assert sum(taken) == 1, f"{addr:#x}: two cores took the write"
                    break
            else:
                raise AssertionError(f"{addr:#x}: write not taken")
            for c in cores:
                ctx.set(c.s_axil_awvalid, 0)
                ctx.set(c.s_axil_wvalid, 0)

        log.append(await read(0x000))
        log.append(await read(0x008))
        await write(regs["if1.tx.k"], 5)
        log.append(await read(regs["if1.tx.k"]))
        log.append(await read(IF_STRIDE + 0x08))                  # interface 0's k: unchanged
        log.append(await read(regs["if1.tx.payload_bytes_in_lo"]))
        ctx.set(cores[1].values[("tx", "payload_bytes_in")], 0xFFFF_0000_0000)
        log.append(await read(regs["if1.tx.payload_bytes_in_hi"]))   # latched before
        log.append(await read(5 * IF_STRIDE))                     # no interface 4: core 0, 0

    sim = Simulator(top)
    sim.add_clock(4e-9)
    sim.add_testbench(bench)
    sim.run()
    assert log == [(0, APP_MAGIC), (0, 2), (1, 5), (0, 10), (1, 0x5678_9ABC), (1, 0x1234),
                   (0, 0)]
