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
from inceptionn.sim.axis import Clock, beats_to_frame, frame_to_beats, pause_generator



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
    beats = []
    for idx, (frame, user) in enumerate(frames):
        beats.extend((d, k, l, u, idx) for d, k, l, u in frame_to_beats(frame, user, width))
    idle_gen = pause_generator(idle, seed * 2 + 1)
    bp_gen = pause_generator(backpressure, seed * 2 + 2)
    s_valid, s_ready = dut.s_axis_tvalid, dut.s_axis_tready
    s_data, s_keep, s_last, s_user = (dut.s_axis_tdata, dut.s_axis_tkeep, dut.s_axis_tlast,
                                      dut.s_axis_tuser)
    m_valid, m_ready = dut.m_axis_tvalid, dut.m_axis_tready
    m_data, m_keep, m_last, m_user = (dut.m_axis_tdata, dut.m_axis_tkeep, dut.m_axis_tlast,
                                      dut.m_axis_tuser)
    pos = 0
    presenting = False
    cycle = 0
    first_in = None
    last_in = None
    last_out = None
    in_first_cycle = [None] * len(frames)
    in_last_cycle = [None] * len(frames)
    out_first_cycle = []
    frames_out = []
    cur = []
    out_beats = 0
    quiet = 0
    while True:
        if not presenting and pos < len(beats) and not next(idle_gen):
            d, k, l, u, idx = beats[pos]
            if cfgs is not None and cfgs[idx] is not None and in_first_cycle[idx] is None:
                for name, value in cfgs[idx].items():
                    getattr(dut, name).value = port_value(name, value)
            s_data.value = d
            s_keep.value = k
            s_last.value = l
            s_user.value = u
            s_valid.value = 1
            presenting = True
        elif not presenting:
            s_valid.value = 0
        ready = 0 if next(bp_gen) else 1
        m_ready.value = ready
        await RisingEdge(dut.clk)
        cycle += 1
        if presenting and s_ready.value:
            if first_in is None:
                first_in = cycle
            last_in = cycle
            if in_first_cycle[beats[pos][4]] is None:
                in_first_cycle[beats[pos][4]] = cycle
            if beats[pos][2]:
                in_last_cycle[beats[pos][4]] = cycle
            pos += 1
            presenting = False
        if ready and m_valid.value:
            if not cur:
                out_first_cycle.append(cycle)
            beat = (int(m_data.value), int(m_keep.value), int(m_last.value), int(m_user.value))
            cur.append(beat)
            out_beats += 1
            last_out = cycle
            if beat[2]:
                frames_out.append((beats_to_frame(cur, width), bool(beat[3])))
                cur = []
        if len(frames_out) >= expect and pos >= len(beats):
            quiet += 1
            if quiet >= drain:
                break
        if cycle > timeout_cycles:
            raise TimeoutError(f"{len(frames_out)} of {expect} frames out, {pos} of "
                               f"{len(beats)} beats in after {cycle} cycles")
    s_valid.value = 0
    if len(frames_out) != expect or cur:
        raise AssertionError(f"expected {expect} frames out, got {len(frames_out)}"
                             f"{' and a partial one' if cur else ''}")
    return {
        "frames_out": frames_out,
        "cycles": (last_out - first_in + 1) if (first_in and last_out) else 0,
        "in_cycles": (last_in - first_in + 1) if first_in else 0,
        "in_beats": len(beats), "out_beats": out_beats,
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
