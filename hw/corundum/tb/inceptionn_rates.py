"""The rates and latency benchmark's common part, for Corundum's core testbenches (cocotb
1.8, Icarus): the NetFPGA SUME's (test_inceptionn_rates.py, 10G XGMII MAC, 64-bit
interface streams) and the Alveo 100G design's (test_inceptionn_rates_100g.py, 100G
AXI-stream MAC, 512-bit streams). `inceptionn corundum` writes it next to both.

Each measurement drives frames back to back with the app's engines enabled or disabled
and checks every frame against the golden model (the only assert); the figures are
logged and written to a JSON file after each measurement, so a run cut short keeps what
it measured.

- TX: the driver model queues the frames at once; the rate is what leaves the MAC model,
  from the start of the first frame (its preamble) to the end of the last. Wire bits in
  that window: each frame with its preamble and, where the model sends one, its FCS,
  plus the gaps between frames (not after the last), so a MAC at its line rate shows a
  share of 1.0.
- RX: the frames are queued into the MAC model at once (it sends them back to back at
  its line rate); the rate is what the block hands to Corundum's ingress path, from the
  first beat of the first frame to the last beat of the last, in beats and in bytes per
  clock of the 250 MHz core clock; the host must receive every frame.
- Each measurement starts SETTLE_US after the previous one's last frame (see there).
- Latency: clocks between a frame's first beat into the block and its first beat out,
  and from its last beat in to its first beat out, at the block's ports in Corundum's
  mqnic_core (without the app those ports are one wire: this is what the block adds).
"""

import json

import cocotb
from cocotb.triggers import RisingEdge, Timer
from cocotb.utils import get_sim_time, get_time_from_sim_steps

from inceptionn_suite import K, pad60, write

from inceptionn.golden import TOS_DEFAULT
from inceptionn.rtl import rtl_golden

CLOCK_S = 4e-9                       # the core clock, 250 MHz
# Each measurement starts this long after the previous one ended: the driver model and
# Corundum's DMA are still busy with the last frames' completions and receive buffers
# for a while, and a transmit measurement started at once was fed about 13% slower
# (0.753 NIC beats a clock into the block instead of 0.871 at 1514 bytes, 100G, whether
# the engines were enabled or not: it was the order of the measurements).
SETTLE_US = 2
HEADERS = 14 + 20 + 20               # Ethernet, IPv4, TCP


def gradient_frame(size, seed):
    """One TCP frame of `size` bytes (DSCP 10) whose payload is float32 gradients; at 1502
    bytes it is inceptionn_suite.gradient_frames(seed)[0]."""
    import numpy as np
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    if size <= HEADERS or (size - HEADERS) % 4:
        raise ValueError(f"{size}-byte frame: the TCP payload must be whole float32 values")
    n = size - HEADERS
    grads = np.random.default_rng(seed).normal(0, 1e-2, max(2400, n // 4)).astype("<f4").tobytes()
    return bytes(Ether(src="5a:51:52:53:54:55", dst="da:d1:d2:d3:d4:d5")
                 / IP(src="192.168.1.100", dst="192.168.1.101", tos=TOS_DEFAULT)
                 / TCP(sport=5678, dport=1234, flags="A", seq=seed) / grads[:n])


class Wire:
    """One MAC model of a testbench: `send(frame)` queues a frame into its receive side,
    `recv()` returns the next transmitted frame as (bytes, start, end) in simulator
    steps; what each frame costs on the wire besides its bytes; the line rate."""

    def __init__(self, send, recv, line_bps, preamble, fcs, gap, name):
        self.send, self.recv, self.line_bps, self.name = send, recv, line_bps, name
        self.preamble, self.fcs, self.gap = preamble, fcs, gap

    def window_bits(self, sizes):
        """Wire bits from the start of the first frame to the end of the last."""
        return 8 * (sum(n + self.preamble + self.fcs for n in sizes) + self.gap * (len(sizes) - 1))

    def line_frames_per_s(self, size):
        """A real Ethernet line's frames per second at this frame size (preamble and SFD 8,
        FCS 4, gap 12 bytes), whatever the model counts."""
        return self.line_bps / (8 * (size + 8 + 4 + 12))


def _on(sig):
    """Bit 0 (interface 0) of a per-interface vector; other interfaces' bits may be X."""
    return sig.value.binstr[-1] == "1"


class BlockPorts:
    """The app block's interface-level ports in Corundum's mqnic_core `core`, watched each
    clock while on: per frame, the clock of its first and last beat in and out and the
    beats before it; beats in and out; clocks with a beat offered but not taken (valid,
    not ready) on each side."""

    def __init__(self, core, clk, d):
        self.sides = {side: [getattr(core, f"app_{side}_axis_if_{d}_t{f}")
                             for f in ("valid", "ready", "last")] for side in ("s", "m")}
        self.clk = clk
        self.on = False
        self.events = {s: {"first": [], "last": [], "beats": 0, "beats_before": [], "stalled": 0}
                       for s in self.sides}
        self._task = None

    def start(self):
        self.on = True
        self._task = cocotb.start_soon(self._watch())

    def stop(self):
        self.on = False
        self._task.kill()

    async def _watch(self):
        cycle = 0
        starting = {s: True for s in self.sides}
        while True:
            await RisingEdge(self.clk)
            cycle += 1
            if not self.on:
                continue
            for side, (valid, ready, last) in self.sides.items():
                if not _on(valid):
                    continue
                ev = self.events[side]
                if not _on(ready):
                    ev["stalled"] += 1
                    continue
                if starting[side]:
                    ev["first"].append(cycle)
                    ev["beats_before"].append(ev["beats"])
                ev["beats"] += 1
                starting[side] = _on(last)
                if starting[side]:
                    ev["last"].append(cycle)

    def summary(self, frames):
        return summarize(self.events, frames)


def summarize(events, frames):
    """The figures of BlockPorts' events for `frames` frames through the block."""
    s, m = events["s"], events["m"]
    assert len(s["first"]) == len(m["first"]) == len(s["last"]) == len(m["last"]) == frames, (
        f"{len(s['first'])} frames into the block, {len(m['first'])} out, {frames} sent")
    lat_first = [o - i for i, o in zip(s["first"], m["first"])]
    lat_last = [o - i for i, o in zip(s["last"], m["first"])]
    span_in = s["last"][-1] - s["first"][0] + 1
    span_out = m["last"][-1] - m["first"][0] + 1
    # The same from the second frame on: the first frame crosses one lane alone at 512 bits
    # (docs/engine-lanes.md), so this is nearer what a long burst sustains.
    later_clocks = m["last"][-1] - m["first"][1] + 1 if frames > 1 else None
    later = round((m["beats"] - m["beats_before"][1]) / later_clocks, 3) if frames > 1 else None
    return {
        "beats_in": s["beats"], "beats_out": m["beats"],
        "in_beats_per_clock": round(s["beats"] / span_in, 3),
        "out_beats_per_clock": round(m["beats"] / span_out, 3),
        "out_beats_per_clock_from_frame_2": later,
        "out_clocks_from_frame_2": later_clocks,
        "in_clocks": span_in, "out_clocks": span_out,
        "in_not_taken_clocks": s["stalled"], "out_not_taken_clocks": m["stalled"],
        "latency_first_in_to_first_out": [min(lat_first), max(lat_first)],
        "latency_last_in_to_first_out": [min(lat_last), max(lat_last)],
        "latency_first_frame": [lat_first[0], lat_last[0]],
    }


async def measure_tx(tb, ports, wire, frames, enable):
    """TX with the engines' enable register at `enable`: the frames sent by the driver
    model leave `wire` as golden says."""
    await write(tb, "if0.tx.enable", enable)
    await write(tb, "if0.tx.k", K)
    await write(tb, "if0.tx.codec", 1)              # bounded
    await Timer(SETTLE_US, "us")
    ports.start()
    for f in frames:
        await tb.driver.interfaces[0].start_xmit(f, 0)
    pkts = [await wire.recv() for _ in frames]
    ports.stop()
    for f, (data, _, _) in zip(frames, pkts):
        want = rtl_golden.tx_frame(f, k=K, codec="bounded") if enable else f
        assert data == pad60(want), "TX frame is not golden's"
    seconds = get_time_from_sim_steps(pkts[-1][2] - pkts[0][1], "ps") * 1e-12
    sizes = [len(d) for d, _, _ in pkts]
    wire_bits = wire.window_bits(sizes)
    host_bits = sum(8 * len(f) for f in frames)
    n = len(frames)
    block = ports.summary(n)
    return {"frames": n, "frame_bytes": len(frames[0]), "wire_frame_bytes": sizes[0],
            "frames_per_s": round(n / seconds),
            "line_frames_per_s": round(wire.line_frames_per_s(sizes[0])),
            "wire_gbps": round(wire_bits / seconds / 1e9, 3),
            "line_share": round(wire_bits / seconds / wire.line_bps, 3),
            "host_frame_gbps": round(host_bits / seconds / 1e9, 3),
            # The window on the wire leaves out the first frame's time in the block; the
            # block's input over its own window does not.
            "host_frame_gbps_into_block": round(host_bits / (block["in_clocks"] * CLOCK_S) / 1e9, 3),
            "block": block}


async def measure_rx(tb, ports, wire, frames, enable, beat_bytes):
    """RX with the engines' enable register at `enable`: the frames' compressed versions
    sent back to back into `wire` reach the host as golden says."""
    await write(tb, "if0.rx.enable", enable)
    wires = [pad60(rtl_golden.tx_frame(f, k=K, codec="bounded")) for f in frames]
    await Timer(SETTLE_US, "us")
    ports.start()
    t0 = get_sim_time("ps")
    for w in wires:
        await wire.send(w)
    got = [await tb.driver.interfaces[0].recv() for _ in wires]
    t_host = get_sim_time("ps") - t0
    ports.stop()
    for w, g in zip(wires, got):
        want = rtl_golden.rx_frame(w)[0] if enable else w
        assert g.data == want, "RX frame is not golden's"
    n = len(frames)
    block = ports.summary(n)
    seconds_out = block["out_clocks"] * CLOCK_S
    out_bytes = sum(len(g.data) for g in got)
    return {"frames": n, "wire_frame_bytes": len(wires[0]), "host_frame_bytes": len(got[0].data),
            "wire_gbps_offered": round(wire.line_bps / 1e9, 3),
            "wire_seconds_at_line": wire.window_bits([len(w) for w in wires]) / wire.line_bps,
            "to_ingress_gbps": round(8 * out_bytes / seconds_out / 1e9, 3),
            "to_ingress_frames_per_s": round(n / seconds_out),
            "to_ingress_bytes_per_clock_share": round(out_bytes / (block["out_clocks"] * beat_bytes), 3),
            # From the second frame on: the first crosses one lane alone (see summarize).
            "to_ingress_bytes_per_clock_share_from_frame_2":
                round((out_bytes - len(got[0].data)) / (block["out_clocks_from_frame_2"] * beat_bytes), 3)
                if n > 1 else None,
            "host_all_received_us": round(t_host * 1e-6, 2),
            "block": block}


def ratios(results, tag=""):
    """Enabled over disabled: TX frames per second, RX frames per second into ingress."""
    tx_on, tx_off = results[f"tx_enabled{tag}"], results[f"tx_disabled{tag}"]
    rx_on, rx_off = results[f"rx_enabled{tag}"], results[f"rx_disabled{tag}"]
    return {"tx_frames_per_s_enabled_over_disabled":
            round(tx_on["frames_per_s"] / tx_off["frames_per_s"], 3),
            "tx_host_gbps_enabled_over_disabled":
            round(tx_on["host_frame_gbps"] / tx_off["host_frame_gbps"], 3),
            "rx_ingress_frames_per_s_enabled_over_disabled":
            round(rx_on["to_ingress_frames_per_s"] / rx_off["to_ingress_frames_per_s"], 3)}


def record(tb, results, key, value, out):
    """Log one measurement and write everything so far to `out` (JSON)."""
    results[key] = value
    tb.log.info("%s: %s", key, json.dumps(value))
    with open(out, "w") as f:
        json.dump(results, f, indent=2)
