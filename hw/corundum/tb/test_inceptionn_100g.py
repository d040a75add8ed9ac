"""INCEPTIONN's gradient tests in Corundum's 100G core testbenches (the Alveo and VCU118
fpga_100g designs' fpga_core, cocotb 1.8, Icarus): the suite of inceptionn_suite.py with
the host as Corundum's driver model over cocotbext-pcie and the wire as cocotbext-eth's
100G MAC model (512-bit AXI stream) on QSFP port 0. `inceptionn corundum` writes this
file next to Corundum's own test_fpga_core.py; it runs after Corundum's own test, on the
same design, where the app's engines take 512-bit beats natively (two lanes of each).
"""

import cocotb

from test_fpga_core import TB
from inceptionn_suite import mac_io, open_interface, run_suite


def mqnic_core(dut):
    """Corundum's fpga_core's mqnic_core_pcie_us (the Alveo testbench wraps fpga_core as `uut`)."""
    return dut.uut.core_inst if hasattr(dut, "uut") else dut.core_inst


async def start(dut):
    core = mqnic_core(dut)
    return await open_interface(TB(dut, msix_count=2**len(core.core_pcie_inst.irq_index)))


@cocotb.test()
async def run_test_inceptionn(dut):
    tb = await start(dut)
    await run_suite(tb, *mac_io(tb.qsfp_mac[0]), dut.clk_250mhz)
