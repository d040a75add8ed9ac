"""A benchmark in Corundum's NetFPGA SUME core testbench (cocotb 1.8, Icarus): the NIC's
transmit and receive rates with the app's engines enabled and disabled, and the latency
the block adds. Prints measured figures; asserts only that the frames are golden's.

`inceptionn corundum` writes it next to test_inceptionn_sume.py, inceptionn_suite.py and
inceptionn_rates.py (the measurements, shared with the 100G benchmark); run it alone:
``make MODULE=test_inceptionn_rates`` in that folder.

- N MSS-sized gradient frames (1502 bytes, TCP, DSCP 10) per measurement, k = 10, the
  bounded codec; the wire is cocotbext-eth's XGMII on SFP port 0 (10 Gb/s; preamble, FCS
  and the 12-byte gap counted).
- "enabled": the engines' enable registers 1 (compress / decompress); "disabled": 0
  (every frame bypasses the engines, the block stays in the path).
"""

import os

from cocotbext.eth import XgmiiFrame

from inceptionn_rates import (BlockPorts, Wire, gradient_frame, measure_rx, measure_tx,
                              ratios, record)
from inceptionn_suite import write
from test_inceptionn_sume import start

import cocotb

N = int(os.environ.get("INCEPTIONN_RATES_FRAMES", "8"))
OUT = os.environ.get("INCEPTIONN_RATES_OUT", "inceptionn_rates.json")
SIZE = 1502


def xgmii(tb):
    async def send(frame):
        await tb.sfp_source[0].send(XgmiiFrame.from_payload(frame))

    async def recv():
        pkt = await tb.sfp_sink[0].recv()
        assert pkt.check_fcs(), "a frame left the MAC with a bad FCS"
        return bytes(pkt.get_payload()), pkt.sim_time_start, pkt.sim_time_end
    return Wire(send, recv, 10e9, preamble=8, fcs=4, gap=12, name="10G XGMII")


@cocotb.test()
async def run_test_inceptionn_rates(dut):
    tb = await start(dut)
    core, wire = dut.core_inst.core_pcie_inst.core_inst, xgmii(tb)
    results = {}
    for name, enable in (("disabled", 0), ("enabled", 1)):
        frames = [gradient_frame(SIZE, 100 + i) for i in range(N)]
        record(tb, results, f"tx_{name}",
               await measure_tx(tb, BlockPorts(core, dut.clk_250mhz, "tx"), wire, frames, enable), OUT)
        frames = [gradient_frame(SIZE, 200 + i) for i in range(N)]
        record(tb, results, f"rx_{name}",
               await measure_rx(tb, BlockPorts(core, dut.clk_250mhz, "rx"), wire, frames, enable, 8), OUT)
    await write(tb, "if0.tx.enable", 1)
    await write(tb, "if0.rx.enable", 1)
    record(tb, results, "enabled_over_disabled", ratios(results), OUT)
    tb.log.info("written: %s", OUT)
