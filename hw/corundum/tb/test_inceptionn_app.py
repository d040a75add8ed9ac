"""INCEPTIONN's gradient tests in Corundum's template app testbench (the 512-bit
mqnic_core_pcie_us, cocotb 1.8, Icarus): the suite of inceptionn_suite.py with the host
as Corundum's driver model and the wire as cocotbext-eth's AXI-stream MAC model on port 0
(no FCS at this level). `inceptionn corundum` writes this file next to the template's
test_mqnic_core_pcie_us.py; it runs after Corundum's own test, on the same design, so the
engines are crossed by 512-bit streams here (64-bit ones in the SUME testbench).
"""

import cocotb

from test_mqnic_core_pcie_us import TB
from inceptionn_suite import mac_io, open_interface, run_suite


@cocotb.test()
async def run_test_inceptionn(dut):
    tb = await open_interface(TB(dut, msix_count=2**len(dut.core_pcie_inst.irq_index)))
    await run_suite(tb, *mac_io(tb.port_mac[0]), dut.clk)
