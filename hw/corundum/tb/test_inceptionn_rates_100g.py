"""A benchmark in Corundum's Alveo 100G core testbench (fpga_100g's fpga_core, cocotb 1.8,
Icarus; the VCU118's 100G testbench takes it too): the NIC's transmit and receive rates
with the app's engines enabled and disabled, and the latency the block adds, at the
512-bit interface streams where the engines run as lanes. Prints measured figures;
asserts only that the frames are golden's.

`inceptionn corundum` writes it next to test_inceptionn_100g.py, inceptionn_suite.py and
inceptionn_rates.py (the measurements, shared with the SUME benchmark); run it alone:
``make MODULE=test_inceptionn_rates_100g`` in that folder (make corundum-rates-100g).

- Back-to-back TCP gradient frames (DSCP 10, k = 10, the bounded codec) of 1514 bytes
  (MSS-sized) and 9014 bytes (jumbo), N of each per measurement
  (INCEPTIONN_RATES_FRAMES: "N" for both or "N1514,N9014"; default 48 and 24, as many
  jumbo frames as `make bench-hw` sends: the first frame crosses one lane alone, so the
  burst's RX figure depends on its length; the figures from frame 2 on do not).
- The wire is cocotbext-eth's 100G MAC model on QSFP port 0 (512-bit AXI stream at
  322 MHz; it paces frames at 100 Gb/s counting the 8-byte preamble and the 12-byte gap
  and sends no FCS, so a 1514-byte frame takes 1534 byte times where a real 100GbE line
  takes 1538: the TX figures give both the model's line share and a real line's frames
  per second at that size).
- RX: the block's output in beats and in restored bytes per clock of the 250 MHz core
  clock; 512 bits a clock is 128 Gb/s, more than the 100G line: compressed frames
  arriving at the line rate decompress to about three times as many bytes, so with the
  engines enabled the block's output is the limit, and the target is >= 0.95 of 512
  bits a clock.
"""

import os

from inceptionn_rates import (BlockPorts, Wire, gradient_frame, measure_rx, measure_tx,
                              ratios, record)
from inceptionn_suite import write
from test_inceptionn_100g import mqnic_core, start

import cocotb

SIZES = (1514, 9014)
_N = os.environ.get("INCEPTIONN_RATES_FRAMES", "48,24").split(",")
N = dict(zip(SIZES, map(int, _N * 2 if len(_N) == 1 else _N)))
OUT = os.environ.get("INCEPTIONN_RATES_OUT", "inceptionn_rates_100g.json")
BEAT_BYTES = 64


def mac_100g(mac):
    async def send(frame):
        await mac.rx.send(frame)

    async def recv():
        f = await mac.tx.recv()
        return bytes(f.data), f.sim_time_start, f.sim_time_end
    return Wire(send, recv, 100e9, preamble=8, fcs=0, gap=12, name="100G AXI-stream MAC")


@cocotb.test()
async def run_test_inceptionn_rates_100g(dut):
    tb = await start(dut)
    core, wire = mqnic_core(dut).core_pcie_inst.core_inst, mac_100g(tb.qsfp_mac[0])
    results = {"frames": {str(s): N[s] for s in SIZES}}
    for size in SIZES:
        for name, enable in (("disabled", 0), ("enabled", 1)):
            tb.log.info("%d-byte frames, engines %s", size, name)
            frames = [gradient_frame(size, 100 + i) for i in range(N[size])]
            record(tb, results, f"tx_{name}_{size}", await measure_tx(
                tb, BlockPorts(core, dut.clk_250mhz, "tx"), wire, frames, enable), OUT)
            frames = [gradient_frame(size, 200 + i) for i in range(N[size])]
            record(tb, results, f"rx_{name}_{size}", await measure_rx(
                tb, BlockPorts(core, dut.clk_250mhz, "rx"), wire, frames, enable, BEAT_BYTES), OUT)
        record(tb, results, f"enabled_over_disabled_{size}", ratios(results, f"_{size}"), OUT)
    await write(tb, "if0.tx.enable", 1)
    await write(tb, "if0.rx.enable", 1)
    tb.log.info("written: %s", OUT)
