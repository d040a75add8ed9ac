"""AxisRegisterSlice: toolchain smoke test (Amaranth -> Verilog -> Verilator -> cocotb)
with cocotbext-axi as the protocol reference, plus the lean driver/monitor."""

import random

import cocotb
from cocotb.triggers import RisingEdge

from inceptionn.rtl import harness
from inceptionn.sim.axis import (AxisDriver, AxisMonitor, Clock, PAUSE_MODES,
                                 pause_generator)

import pytest

# make test runs the engines' testbenches, which hold this stage (every frame against
# golden); this one runs in make sim and make test-long (which CI runs after make
# test), so that make test keeps within its 8 minutes on a fresh 2-core machine.
pytestmark = pytest.mark.long

DUT = "axis_register_slice"


def _design():
    from inceptionn.hw.axis import AxisTop
    from inceptionn.hw.primitives import AxisRegisterSlice
    return AxisTop(AxisRegisterSlice())


async def _reset(dut):
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    await RisingEdge(dut.clk)


def _frames(seed, count):
    rng = random.Random(seed)
    sizes = list(range(1, 4 * 32 + 1)) + [1514, 9014]
    return [(rng.randbytes(rng.choice(sizes)), rng.random() < 0.1) for _ in range(count)]


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, backpressure=PAUSE_MODES)
async def frames_with_cocotbext_axi(dut, idle, backpressure):
    from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
    await _reset(dut)
    src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
    src.set_pause_generator(pause_generator(idle, 1))
    sink.set_pause_generator(pause_generator(backpressure, 2))
    frames = [(f, u) for f, u in _frames(3, 12)]
    for f, u in frames:
        await src.send(AxiStreamFrame(f, tuser=int(u)))
    for f, u in frames:
        rx = await sink.recv()
        assert bytes(rx.tdata) == f
        got_user = rx.tuser[-1] if isinstance(rx.tuser, list) else rx.tuser
        assert bool(got_user) == u


@cocotb.test()
async def lean_stress(dut):
    await _reset(dut)
    drv = AxisDriver(dut, dut.clk, pause=pause_generator("random", 5))
    mon = AxisMonitor(dut, dut.clk, pause=pause_generator("random", 6))
    cocotb.start_soon(mon.run())
    frames = _frames(7, 200)
    await drv.send(frames)
    await mon.wait_frames(len(frames))
    assert mon.frames == [(f, u) for f, u in frames]


def test_axis_register_slice():
    harness.run(_design, DUT, "inceptionn.sim.test_axis_register_slice")
