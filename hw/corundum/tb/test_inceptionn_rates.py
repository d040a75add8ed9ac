"""A benchmark in Corundum's NetFPGA SUME core testbench (cocotb 1.8, Icarus): the NIC's
transmit and receive rates with the app's engines enabled and disabled, and the latency
the block adds. Prints measured figures; asserts only that the frames are golden's.

`inceptionn corundum` writes it next to test_inceptionn_sume.py and inceptionn_suite.py
(whose functions it uses);
run it alone: ``make MODULE=test_inceptionn_rates`` in that folder.

- TX: the driver model queues N MSS-sized gradient frames (TCP, DSCP 10) at once; the
  rate is what leaves the MAC (cocotbext-eth's XGMII sink, start of the first frame to
  the end of the last), as frames per second, wire bits per second (preamble, FCS and
  the 12-byte gap counted, so 10 Gb/s is the line) and the host's frame bits per second
  those wire bits carry.
- RX: N compressed frames sent back to back into the MAC (XGMII source); the rate is
  what the block hands to Corundum's ingress path (``m_axis_if_rx``), first beat of the
  first frame to the last beat of the last, and the host must receive them all.
- "enabled": the engines' enable registers 1 (compress / decompress); "disabled": 0
  (every frame bypasses the engines, the block stays in the path).
- Latency: clocks of the 250 MHz core clock between a frame's first beat into the block
  (``s_axis_if_*``) and its first beat out (``m_axis_if_*``), and from its last beat in
  to its first beat out; without the app those ports are one wire, so this is what the
  block adds.
"""

import json
import os

import cocotb
from cocotb.triggers import RisingEdge
from cocotb.utils import get_sim_time, get_time_from_sim_steps
from cocotbext.eth import XgmiiFrame

from inceptionn_suite import K, gradient_frames, pad60, write
from test_inceptionn_sume import start

from inceptionn.rtl import rtl_golden

N = int(os.environ.get("INCEPTIONN_RATES_FRAMES", "8"))
OUT = os.environ.get("INCEPTIONN_RATES_OUT", "inceptionn_rates.json")
LINE_BPS = 10e9
WIRE_EXTRA = 8 + 4 + 12         # preamble and SFD, FCS, inter-frame gap


def _on(sig):
    """Bit 0 (interface 0) of a per-interface vector; other interfaces' bits may be X."""
    return sig.value.binstr[-1] == "1"


class BlockPorts:
    """The app block's interface-level ports in Corundum's core, watched each clock while
    on: per frame, the clock of its first and last beat in and of its first and last
    beat out; beats in and out."""

    def __init__(self, dut, d):
        core = dut.core_inst.core_pcie_inst.core_inst
        self.sides = {side: [getattr(core, f"app_{side}_axis_if_{d}_t{f}")
                             for f in ("valid", "ready", "last")] for side in ("s", "m")}
        self.clk = dut.clk_250mhz
        self.on = False
        self.events = {s: {"first": [], "last": [], "beats": 0} for s in self.sides}

    async def watch(self):
        cycle = 0
        starting = {s: True for s in self.sides}
        while True:
            await RisingEdge(self.clk)
            cycle += 1
            if not self.on:
                continue
            for side, (valid, ready, last) in self.sides.items():
                if _on(valid) and _on(ready):
                    ev = self.events[side]
                    ev["beats"] += 1
                    if starting[side]:
                        ev["first"].append(cycle)
                    starting[side] = bool(_on(last))
                    if starting[side]:
                        ev["last"].append(cycle)

    def summary(self, frames):
        s, m = self.events["s"], self.events["m"]
        assert len(s["first"]) == len(m["first"]) == frames, (
            f"{len(s['first'])} frames into the block, {len(m['first'])} out, {frames} sent")
        lat_first = [o - i for i, o in zip(s["first"], m["first"])]
        lat_last = [o - i for i, o in zip(s["last"], m["first"])]
        span_in = s["last"][-1] - s["first"][0] + 1
        span_out = m["last"][-1] - m["first"][0] + 1
        return {
            "beats_in": s["beats"], "beats_out": m["beats"],
            "in_beats_per_clock": round(s["beats"] / span_in, 3),
            "out_beats_per_clock": round(m["beats"] / span_out, 3),
            "out_clocks": span_out,
            "latency_first_in_to_first_out": [min(lat_first), max(lat_first)],
            "latency_last_in_to_first_out": [min(lat_last), max(lat_last)],
        }


def _frames(seed):
    """N MSS-sized TCP gradient frames (1514 bytes), each with other values."""
    return [gradient_frames(seed + i)[0] for i in range(N)]


async def _tx(tb, dut, enable):
    await write(tb, "if0.tx.enable", enable)
    await write(tb, "if0.tx.k", K)
    await write(tb, "if0.tx.codec", 1)              # bounded
    frames = _frames(100)
    ports = BlockPorts(dut, "tx")
    task = cocotb.start_soon(ports.watch())
    ports.on = True
    for f in frames:
        await tb.driver.interfaces[0].start_xmit(f, 0)
    pkts = [await tb.sfp_sink[0].recv() for _ in frames]
    ports.on = False
    task.kill()
    for f, p in zip(frames, pkts):
        want = rtl_golden.tx_frame(f, k=K, codec="bounded") if enable else f
        assert p.check_fcs() and p.get_payload() == pad60(want), "TX frame is not golden's"
    # The sink stamps frames in simulator steps.
    seconds = get_time_from_sim_steps(pkts[-1].sim_time_end - pkts[0].sim_time_start, "ps") * 1e-12
    wire_bits = sum(8 * (len(p.get_payload()) + WIRE_EXTRA) for p in pkts)
    host_bits = sum(8 * len(f) for f in frames)
    return {"frames": N, "frame_bytes": len(frames[0]),
            "wire_frame_bytes": len(pkts[0].get_payload()),
            "frames_per_s": round(N / seconds), "wire_gbps": round(wire_bits / seconds / 1e9, 3),
            "line_share": round(wire_bits / seconds / LINE_BPS, 3),
            "host_frame_gbps": round(host_bits / seconds / 1e9, 3),
            "block": ports.summary(N)}


async def _rx(tb, dut, enable):
    await write(tb, "if0.rx.enable", enable)
    frames = _frames(200)
    wires = [pad60(rtl_golden.tx_frame(f, k=K, codec="bounded")) for f in frames]
    ports = BlockPorts(dut, "rx")
    task = cocotb.start_soon(ports.watch())
    ports.on = True
    t0 = get_sim_time("ps")
    for w in wires:
        await tb.sfp_source[0].send(XgmiiFrame.from_payload(w))
    got = [await tb.driver.interfaces[0].recv() for _ in wires]
    t_host = get_sim_time("ps") - t0
    ports.on = False
    task.kill()
    for w, g in zip(wires, got):
        want = rtl_golden.rx_frame(w)[0] if enable else w
        assert g.data == want, "RX frame is not golden's"
    block = ports.summary(N)
    seconds_out = block["out_clocks"] * 4e-9            # 250 MHz: 4 ns a clock
    out_bits = sum(8 * len(g.data) for g in got)
    wire_bits = sum(8 * (len(w) + WIRE_EXTRA) for w in wires)
    return {"frames": N, "wire_frame_bytes": len(wires[0]), "host_frame_bytes": len(got[0].data),
            "wire_gbps_offered": round(LINE_BPS / 1e9, 3),
            "wire_seconds_at_line": wire_bits / LINE_BPS,
            "to_ingress_gbps": round(out_bits / seconds_out / 1e9, 3),
            "to_ingress_frames_per_s": round(N / seconds_out),
            "host_all_received_us": round(t_host * 1e-6, 2),
            "block": block}


@cocotb.test()
async def run_test_inceptionn_rates(dut):
    tb = await start(dut)
    results = {}
    for name, enable in (("disabled", 0), ("enabled", 1)):
        results[f"tx_{name}"] = await _tx(tb, dut, enable)
        results[f"rx_{name}"] = await _rx(tb, dut, enable)
    await write(tb, "if0.tx.enable", 1)
    await write(tb, "if0.rx.enable", 1)
    for key, r in results.items():
        tb.log.info("%s: %s", key, json.dumps(r))
    on, off = results["tx_enabled"], results["tx_disabled"]
    tb.log.info("TX enabled / disabled: frames per second x%.3f, host frame Gb/s x%.3f",
                on["frames_per_s"] / off["frames_per_s"],
                on["host_frame_gbps"] / off["host_frame_gbps"])
    on, off = results["rx_enabled"], results["rx_disabled"]
    tb.log.info("RX enabled / disabled: frames per second into ingress x%.3f",
                on["to_ingress_frames_per_s"] / off["to_ingress_frames_per_s"])
    with open(OUT, "w") as f:
        json.dump(results, f, indent=2)
    tb.log.info("written: %s", OUT)
