"""The app block (`mqnic_app_block`, hw/corundum/) on Verilator, as Corundum's core sees
it: the generated Verilog shell with Corundum's parameters around the Amaranth core,
driven by cocotbext-axi on the interface-level streams and the AXI-Lite control port.

At 64 bits (the 10G boards) and, under make sim-stress, 512 bits (the 100G boards) too,
both in one model (sim/corundum_app.py) and each test driving every width at once: every frame leaves
equal to the golden model's (TX: ``golden.tx_frame``, RX: ``golden.rx_frame``), with the tid,
tdest and tuser side-band of its own input frame (the TX tag, the RX timestamp), the
bad-frame bit mapped both ways, under an idle x backpressure matrix; frames the TX
engine drops take their side-band with them; the counters read through the register map
equal golden's.
"""

import random

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from inceptionn.rtl.rtl_golden import rx_frame, tx_frame   # the RTL's wire versions
from inceptionn.golden.counters import Counters
from inceptionn.rtl import harness
from inceptionn.rtl import frame_builders as F
from inceptionn.sim.corundum_app import ENGINES, WIDTHS, app_pair, app_w64, side_widths
from inceptionn.sim.axis import pause_generator, stress, stress_count

IDLE = ("none", "random")
CODECS = ("paper", "bounded")


# ---- the testbench -------------------------------------------------------------------

class App:
    """One width's block: its streams and control port (the top's ``w<width>_`` ports)."""

    def __init__(self, dut, width):
        from cocotbext.axi import (AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamSink,
                                   AxiStreamSource)
        from inceptionn.hw.corundum.regmap import register_map
        self.dut, self.width = dut, width
        self.regs = {r.name: r for r in register_map(1, width)}
        p = f"w{width}_"
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, p + "s_axil_app_ctrl"),
                                  dut.clk, dut.rst)
        self.src, self.sink = {}, {}
        for d in ("tx", "rx"):
            self.src[d] = AxiStreamSource(AxiStreamBus.from_prefix(dut, f"{p}s_axis_if_{d}"),
                                          dut.clk, dut.rst)
            self.sink[d] = AxiStreamSink(AxiStreamBus.from_prefix(dut, f"{p}m_axis_if_{d}"),
                                         dut.clk, dut.rst)

    async def read(self, name):
        r = self.regs[name]
        return int.from_bytes(await self.axil.read(r.offset, 4), "little")

    async def write(self, name, value):
        await self.axil.write(self.regs[name].offset, int(value).to_bytes(4, "little"))

    async def counter(self, d, name):
        if f"if0.{d}.{name}_lo" in self.regs:
            lo = await self.read(f"if0.{d}.{name}_lo")
            return lo | (await self.read(f"if0.{d}.{name}_hi")) << 32
        return await self.read(f"if0.{d}.{name}")


async def _start(dut):
    """Clock, reset; {width: App}."""
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    apps = {w: App(dut, w) for w in WIDTHS if hasattr(dut, f"w{w}_s_axis_if_tx_tvalid")}
    assert apps, "the model has no app block's ports"
    dut.rst.value = 1
    for _ in range(4):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    return apps


async def _each(apps, body, *args):
    """`body(app, *args)` for every width at once (one simulation carries both)."""
    tasks = [cocotb.start_soon(body(app, *args)) for app in apps.values()]
    return {w: await t for w, t in zip(apps, tasks)}


def _side(rng, width, d):
    """(tid, tdest, tuser without the bad bit) of one frame, at the widths in PARAMS."""
    s = side_widths(width)
    return (rng.getrandbits(s[(d, "tid")]), rng.getrandbits(s[(d, "tdest")]),
            rng.getrandbits(s[(d, "tuser")] - 1))


async def _send(app, d, frames, rng):
    from cocotbext.axi import AxiStreamFrame
    sides = []
    for f, bad in frames:
        tid, tdest, upper = _side(rng, app.width, d)
        user = [upper << 1] * len(f)
        user[-1] |= int(bad)           # Corundum's bad-frame bit, on the last beat
        sides.append((tid, tdest, upper))
        await app.src[d].send(AxiStreamFrame(f, tid=tid, tdest=tdest, tuser=user))
    return sides


def _user_of(frame):
    u = frame.tuser
    return ([u] if isinstance(u, int) else list(u))


def _check(w, i, got, want, side):
    data, bad = want
    at = f"{w} bits, frame {i}"
    assert bytes(got.tdata) == data, f"{at}: {len(got.tdata)} bytes, expected {len(data)}"
    tid, tdest, upper = side
    assert got.tid == tid and got.tdest == tdest, (
        f"{at}: tid/tdest {got.tid!r}/{got.tdest!r}, expected {tid}/{tdest}")
    users = _user_of(got)
    assert all(u >> 1 == upper for u in users), f"{at}: tuser side-band not its own"
    assert users[-1] & 1 == int(bad), f"{at}: bad-frame bit {users[-1] & 1}, expected {int(bad)}"


def _gradient_frames(seed, jumbo=True):
    vals, _ = F.gradient_values(2400, seed=seed)
    g = F.float_payload(vals)
    out = [(F.tcp_frame(g[:1448]), False), (F.udp_frame(g[:1472]), False),
           (F.udp_frame(g[:600]), True)]                       # bad: bypassed, flagged
    if jumbo:
        out += [(F.tcp_frame(g[:8948]), False), (F.udp_frame(g[:8972]), False),
                (F.udp_frame(g[:9200]), False)]                # too long for TX: dropped
    return out


def _frames(seed, count, jumbo):
    """Mixed frames (every kind the engines tell apart) and gradient frames; the jumbo
    ones (most of a run's time) only where `jumbo`."""
    rng = random.Random(seed)
    frames = F.mixed_frames(seed, count, jumbo=0.0) + _gradient_frames(seed, jumbo)
    rng.shuffle(frames)
    return frames


async def _registers(app):
    from inceptionn.hw.corundum.regmap import APP_MAGIC, APP_VERSION
    assert await app.read("id") == APP_MAGIC
    assert await app.read("version") == APP_VERSION
    assert await app.read("if_count") == 1
    assert await app.read("nic_bits") == app.width
    for name, r in app.regs.items():
        if r.access == "rw":
            assert await app.read(name) == r.init, (app.width, name)
    await app.write("if0.tx.k", 7)
    assert await app.read("if0.tx.k") == 7
    await app.axil.write(app.regs["if0.tx.dscp"].offset + 1, b"\x3f")   # byte 1 only
    assert await app.read("if0.tx.dscp") == 10
    await app.write("if0.tx.dscp", 0xFFFFFF00 | 12)
    assert await app.read("if0.tx.dscp") == 12
    await app.write("if0.tx.frames_in", 5)                               # read-only
    assert await app.read("if0.tx.frames_in") == 0
    assert int.from_bytes(await app.axil.read(0x7C0, 4), "little") == 0  # no interface 6
    await app.write("if0.tx.dscp", 10)
    await app.write("if0.tx.k", 10)


@cocotb.test()
async def registers(dut):
    """The map's fixed words, the engines' defaults, writes with strobes, read-only and
    unmapped words, a wide counter's two halves; each width's own map."""
    await _each(await _start(dut), _registers)


async def _tx(app, idle, backpressure):
    seed = 10 + 2 * IDLE.index(idle) + IDLE.index(backpressure)
    codec = CODECS[(seed + app.width // 512) % 2]        # the two widths, other codecs
    k = 10
    jumbo = idle == backpressure == "none" or stress_count(False, True)
    frames = _frames(seed, stress_count(4, 40), jumbo)
    await app.write("if0.tx.codec", CODECS.index(codec))
    await app.write("if0.tx.k", k)
    counters = Counters()
    exp = []
    for f, bad in frames:
        w = tx_frame(f, k=k, tuser=bad, counters=counters, codec=codec)
        exp.append(None if w is None else (w, bad))
    app.src["tx"].set_pause_generator(pause_generator(idle, seed))
    app.sink["tx"].set_pause_generator(pause_generator(backpressure, seed + 1))
    sides = await _send(app, "tx", frames, random.Random(seed))
    for i, (want, side) in enumerate((e, s) for e, s in zip(exp, sides) if e is not None):
        _check(app.width, i, await app.sink["tx"].recv(), want, side)
    # A dropped frame sent last has no output to wait for: wait for the input instead.
    await app.src["tx"].wait()
    await ClockCycles(app.dut.clk, 200)
    assert counters.dropped >= int(jumbo) and counters.compressed >= 2 and counters.bypassed >= 1
    for name in ("frames_in", "frames_out", "compressed", "bypassed", "fallback", "dropped",
                 "version1", "version2", "payload_bytes_in", "payload_bytes_out"):
        assert await app.counter("tx", name) == getattr(counters, name), (app.width, name)


@cocotb.test()
@cocotb.parametrize(idle=IDLE, backpressure=IDLE)
async def tx_frames(dut, idle, backpressure):
    """s_axis_if_tx -> TX engine -> m_axis_if_tx: golden.tx_frame, side-band kept,
    dropped frames' side-band discarded; counters through the registers."""
    await _each(await _start(dut), _tx, idle, backpressure)


async def _rx(app, idle, backpressure):
    seed = 20 + 2 * IDLE.index(idle) + IDLE.index(backpressure)
    rng = random.Random(seed + app.width)
    frames = []
    jumbo = idle == backpressure == "none" or stress_count(False, True)
    for f, bad in _frames(seed, stress_count(3, 30), jumbo):
        w = tx_frame(f, k=10, codec=rng.choice(CODECS))
        if w is not None:
            frames.append((w, bad))
    # a compressed frame cut short: malformed, flagged
    w = tx_frame(_gradient_frames(seed)[0][0], k=10)
    frames.append((w[:len(w) - 40], False))
    counters = Counters()
    exp = [rx_frame(w, tuser=bad, counters=counters) for w, bad in frames]
    app.src["rx"].set_pause_generator(pause_generator(idle, seed))
    app.sink["rx"].set_pause_generator(pause_generator(backpressure, seed + 1))
    sides = await _send(app, "rx", frames, random.Random(seed))
    for i, (want, side) in enumerate(zip(exp, sides)):
        _check(app.width, i, await app.sink["rx"].recv(), want, side)
    await app.src["rx"].wait()
    assert counters.decompressed >= 2 and counters.malformed >= 1
    await ClockCycles(app.dut.clk, 4)
    for name in ("frames_in", "frames_out", "decompressed", "bypassed", "malformed",
                 "version1", "version2", "payload_bytes_in", "payload_bytes_out"):
        assert await app.counter("rx", name) == getattr(counters, name), (app.width, name)


@cocotb.test()
@cocotb.parametrize(idle=IDLE, backpressure=IDLE)
async def rx_frames(dut, idle, backpressure):
    """s_axis_if_rx -> RX engine -> m_axis_if_rx: compressed frames of both versions,
    their bad-frame and cut variants and foreign frames as golden.rx_frame."""
    await _each(await _start(dut), _rx, idle, backpressure)


class _Beats:
    """Per clock: the beats one width's block takes in and gives out on one direction."""

    def __init__(self, app, d):
        dut, p = app.dut, f"w{app.width}_"
        self.i_v = getattr(dut, f"{p}s_axis_if_{d}_tvalid")
        self.i_r = getattr(dut, f"{p}s_axis_if_{d}_tready")
        self.o_v = getattr(dut, f"{p}m_axis_if_{d}_tvalid")
        self.o_r = getattr(dut, f"{p}m_axis_if_{d}_tready")
        self.o_last = getattr(dut, f"{p}m_axis_if_{d}_tlast")
        self.ins, self.outs, self.firsts = [], [], []
        self.clk = dut.clk
        self.cycle = 0

    async def run(self):
        first = True
        while True:
            await RisingEdge(self.clk)
            self.cycle += 1
            if int(self.i_v.value) and int(self.i_r.value):
                self.ins.append(self.cycle)
            if int(self.o_v.value) and int(self.o_r.value):
                self.outs.append(self.cycle)
                if first:
                    self.firsts.append(self.cycle)
                first = bool(int(self.o_last.value))


async def _measure(app, d, frames, rng):
    beats = _Beats(app, d)
    task = cocotb.start_soon(beats.run())
    await _send(app, d, frames, rng)
    for _ in frames:
        await app.sink[d].recv()
    task.cancel()
    return beats


async def _rates(app):
    vals, _ = F.gradient_values(6 * 362, seed=5)
    g = F.float_payload(vals)
    tx_in = [(F.tcp_frame(g[i * 1448:(i + 1) * 1448]), False) for i in range(6)]
    rx_in = [(tx_frame(f, k=10), False) for f, _ in tx_in]
    out = {"nic_bits": app.width}
    for d, frames in (("tx", tx_in), ("rx", rx_in)):
        rng = random.Random(1)
        b = await _measure(app, d, frames, rng)
        span_in = b.ins[-1] - b.ins[0] + 1
        span_out = b.outs[-1] - b.outs[0] + 1
        lone = await _measure(app, d, frames[:1], rng)
        out[d] = {"frames": len(frames), "beats_in": len(b.ins), "in_beats_per_clock":
                  round(len(b.ins) / span_in, 4), "beats_out": len(b.outs),
                  "out_beats_per_clock": round(len(b.outs) / span_out, 4),
                  "latency_first_in_to_first_out": lone.firsts[0] - lone.ins[0],
                  "latency_last_in_to_first_out": lone.firsts[0] - lone.ins[-1]}
    return out


@cocotb.test(skip=not stress_count(False, True))
async def rates(dut):
    """A benchmark, run under INCEPTIONN_STRESS=1 (make sim-stress); measured, not
    asserted: with no idle input and no backpressure, the beats per clock each direction
    takes in and gives out, over back-to-back MSS-sized gradient
    frames, and the clocks from a lone frame's first (last) beat in to its first beat
    out, for each width. Written to rates.json in the run's folder."""
    import json
    out = await _each(await _start(dut), _rates)
    with open("rates.json", "w") as f:
        json.dump(list(out.values()), f, indent=1)


# ---- pytest entry ---------------------------------------------------------------------

# make test: the 64-bit block alone; make sim-stress: both widths' blocks in one model
# (the 512-bit core doubled the model's build, sim/corundum_app.py says why it waits).
MODEL, FACTORY, MODEL_WIDTHS = (("corundum_app_pair", app_pair, WIDTHS) if stress() else
                                ("corundum_app_w64", app_w64, (64,)))


@pytest.mark.long
def test_corundum_app():
    """The blocks in one model (sim/corundum_app.py)."""
    from inceptionn.hw.corundum.app import AppConfig
    from inceptionn.hw.corundum.shell import shell_verilog
    shell = harness.model_dir(FACTORY, MODEL) / "mqnic_app_block.v"
    shell.parent.mkdir(parents=True, exist_ok=True)
    text = shell_verilog([AppConfig(nic_bits=w) for w in MODEL_WIDTHS])
    if not shell.exists() or shell.read_text() != text:
        shell.write_text(text)
    # The engines stay modules of their own, one C++ class each for both widths' instances
    # (Verilator would inline them into each instance and compile them twice). As for
    # every model, only the top's signals are visible to cocotb (harness.build).
    vlt = shell.with_name("model.vlt")
    vlt_text = ("`verilator_config\n"
                + "".join(f'no_inline -module "{name}"\n' for name, _ in ENGINES))
    if not vlt.exists() or vlt.read_text() != vlt_text:
        vlt.write_text(vlt_text)
    harness.run(FACTORY, MODEL, "inceptionn.sim.test_corundum_app", extra_sources=[vlt, shell])
    rates = harness.model_dir(FACTORY, MODEL) / "runs" / "all" / "rates.json"
    if stress_count(False, True):
        print(rates.read_text())    # the measured rates (pytest -s shows them)
