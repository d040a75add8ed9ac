"""cocotb module behind sim/engines.py: plays one job of frames through an engine.

The job (a pickle named by INCEPTIONN_JOB) holds the frames, the configuration and the
idle/backpressure modes; the results go to the pickle named by INCEPTIONN_RESULT. One
coroutine drives and samples both AXI ports each clock (the fastest way through
cocotb), so a run of thousands of frames takes seconds to a minute.
"""

import os
import pickle

import cocotb
from cocotb.triggers import RisingEdge

from inceptionn.golden import DSCP_DEFAULT, versions_mask
from inceptionn.rtl.designs import COUNTER_NAMES
from inceptionn.sim.axis import AxisDriver, AxisMonitor, Clock, Streams, frame_to_beats, pause_generator



async def reset(dut, cycles=3):
    dut.s_axis_tvalid.value = 0
    dut.m_axis_tready.value = 0
    dut.rst.value = 1
    for _ in range(cycles):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    await RisingEdge(dut.clk)


# The engines' codec port: 0 the paper's codec (wire format version 1), 1 the bounded one
# (version 2); the golden model names them.
CODEC_NAMES = ("paper", "bounded")


def codec_port(codec):
    """A codec given by name ("paper", "bounded") or port value (0, 1) -> port value."""
    return CODEC_NAMES.index(codec) if isinstance(codec, str) else int(codec)


def versions_port(versions):
    """RX's accepted versions as a tuple of versions (golden's) or a mask -> port value."""
    return int(versions) if isinstance(versions, int) else versions_mask(versions)


def port_value(name, value):
    """A configuration port's value as the DUT takes it."""
    if name == "codec":
        return codec_port(value)
    return versions_port(value) if name == "versions" else int(value)


def configure(dut, *, k=10, dscp=DSCP_DEFAULT, enable=True, codec="bounded", version=3, versions=(3,)):
    dut.enable.value = int(enable)
    dut.dscp.value = dscp
    if hasattr(dut, "k"):
        dut.k.value = k
    if hasattr(dut, "codec"):
        dut.codec.value = codec_port(codec)
    # Verilator leaves an undriven input at 0, so every top's config port is set here.
    if hasattr(dut, "version"):
        dut.version.value = int(version)
    if hasattr(dut, "versions"):
        dut.versions.value = versions_port(versions)


def read_counters(dut):
    return {n: int(getattr(dut, n).value) for n in COUNTER_NAMES if hasattr(dut, n)}


async def play(dut, frames, *, idle="none", backpressure="none", seed=0, expect=None,
               timeout_cycles=1_000_000, drain=64, cfgs=None):
    """Send `frames` [(bytes, tuser)] and collect output frames until `expect` of them
    came out (default: as many as were sent), then `drain` more quiet cycles.
    ``cfgs``: per input frame, None or a dict of configuration ports (k, codec, dscp,
    enable) set while its first beat is offered (the engine samples them there).

    Returns dict(frames_out, cycles, in_cycles, in_beats, out_beats, in_last_cycle,
    out_first_cycle); cycles spans first input beat to last output beat, in_cycles the
    input beats only (first to last accepted)."""
    expect = len(frames) if expect is None else expect
    width = len(dut.s_axis_tdata) // 8        # bytes a beat: 32, or 64 at 512 bits
    beats = [(b, idx) for idx, (frame, user) in enumerate(frames)
             for b in frame_to_beats(frame, user, width)]
    in_first_cycle = [None] * len(frames)
    in_last_cycle = [None] * len(frames)
    out_first_cycle = []
    last_out = [None]

    def put(item):
        beat, idx = item
        if cfgs is not None and cfgs[idx] is not None and in_first_cycle[idx] is None:
            for name, value in cfgs[idx].items():
                getattr(dut, name).value = port_value(name, value)
        drv._put(beat)

    def taken(item):
        beat, idx = item
        if in_first_cycle[idx] is None:
            in_first_cycle[idx] = streams.cycle
        if beat[2]:
            in_last_cycle[idx] = streams.cycle

    def out_beat(beat, first):
        if first:
            out_first_cycle.append(streams.cycle)
        last_out[0] = streams.cycle

    drv = AxisDriver(dut, dut.clk, pause=pause_generator(idle, seed * 2 + 1), beat_bytes=width,
                     on_taken=taken)
    drv.put = put                             # the beat, and its frame's configuration
    drv.load(beats)
    mon = AxisMonitor(dut, dut.clk, pause=pause_generator(backpressure, seed * 2 + 2),
                      beat_bytes=width, on_beat=out_beat)
    streams = Streams(dut.clk, drv, mon)
    await streams.run_until(lambda: len(mon.frames) >= expect and drv.sent >= len(beats),
                            timeout_cycles, lambda: f"{len(mon.frames)} of {expect} frames out, "
                                                    f"{drv.sent} of {len(beats)} beats in")
    await streams.run(drain)
    dut.s_axis_tvalid.value = 0
    if len(mon.frames) != expect or mon.partial:
        raise AssertionError(f"expected {expect} frames out, got {len(mon.frames)}"
                             f"{' and a partial one' if mon.partial else ''}")
    first_in = next((c for c in in_first_cycle if c is not None), None)
    last_in = max((c for c in in_last_cycle if c is not None), default=None)
    return {
        "frames_out": mon.frames,
        "cycles": (last_out[0] - first_in + 1) if (first_in and last_out[0]) else 0,
        "in_cycles": (last_in - first_in + 1) if first_in else 0,
        "in_beats": len(beats), "out_beats": mon.beats,
        "in_first_cycle": in_first_cycle, "in_last_cycle": in_last_cycle,
        "out_first_cycle": out_first_cycle,
    }


def latencies(comes_out, in_first_cycle, out_first_cycle):
    """Cycles from each forwarded frame's first input beat to its first output beat (never
    negative, for a store-and-forward TX and a cut-through RX alike)."""
    sent = [c for c, out in zip(in_first_cycle, comes_out) if out]
    return [o - i for i, o in zip(sent, out_first_cycle)]


@cocotb.test()
async def engine_run(dut):
    with open(os.environ["INCEPTIONN_JOB"], "rb") as f:
        job = pickle.load(f)
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    configure(dut, k=job["k"], dscp=job["dscp"], enable=job["enable"], codec=job["codec"],
              version=job.get("version", 3), versions=job.get("versions", (3,)))
    await reset(dut)
    res = await play(dut, job["frames"], idle=job["idle"], backpressure=job["backpressure"],
                     seed=job["seed"], expect=sum(job["comes_out"]),
                     timeout_cycles=job["timeout_cycles"], cfgs=job.get("cfgs"))
    result = {
        "frames_out": res["frames_out"], "cycles": res["cycles"], "in_cycles": res["in_cycles"],
        "in_beats": res["in_beats"],
        "out_beats": res["out_beats"], "counters": read_counters(dut),
        "latencies": latencies(job["comes_out"], res["in_first_cycle"], res["out_first_cycle"]),
    }
    with open(os.environ["INCEPTIONN_RESULT"], "wb") as f:
        pickle.dump(result, f)
