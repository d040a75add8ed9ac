"""INCEPTIONN's gradient tests in Corundum's NetFPGA SUME core testbench (cocotb 1.8,
Icarus): the suite of inceptionn_suite.py with the host as Corundum's driver model over
cocotbext-pcie and the wire as cocotbext-eth's XGMII on SFP port 0 (the MAC pads to 60
bytes and appends the FCS, which is checked). `inceptionn corundum` writes this file next
to Corundum's own test_fpga_core.py; it runs after Corundum's own test, on the same design.
"""

import cocotb
from cocotbext.eth import XgmiiFrame

from test_fpga_core import TB

from inceptionn_suite import open_interface, run_suite


async def start(dut):
    return await open_interface(TB(dut, msix_count=2**len(dut.core_inst.core_pcie_inst.irq_index)))


@cocotb.test()
async def run_test_inceptionn(dut):
    tb = await start(dut)

    async def send(frame):
        await tb.sfp_source[0].send(XgmiiFrame.from_payload(frame))

    async def recv():
        pkt = await tb.sfp_sink[0].recv()
        assert pkt.check_fcs(), "a frame left the MAC with a bad FCS"
        return bytes(pkt.get_payload())

    await run_suite(tb, send, recv, dut.clk_250mhz)
