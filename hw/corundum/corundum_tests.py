"""The files of this project that the install puts into a user's Corundum checkout
besides the Verilog: the gradient tests for Corundum's testbenches (tb/, run there by
cocotb 1.8 with the project installed) and the app folder's README."""

from pathlib import Path

from .regmap import APP_MAGIC, register_map

__all__ = ["suite", "sume_tests", "app_tests", "tests_100g", "rates_common", "rates_bench",
           "rates_bench_100g", "APP_README"]

_TB = Path(__file__).resolve().parent / "tb"

APP_README = """\
# INCEPTIONN as a Corundum application

Written by `inceptionn corundum --tree <this checkout>` from the INCEPTIONN project
(lossy float32 gradient compression engines, Li et al., MICRO 2018). Regenerate it
there rather than editing: the Verilog in rtl/ is generated.

- rtl/mqnic_app_block.v: the application block: one TX engine on each interface's
  s_axis_if_tx -> m_axis_if_tx, one RX engine on s_axis_if_rx -> m_axis_if_rx; the
  other streams passed through, the rest tied off as in the template app.
- rtl/inceptionn_app_w64.v, inceptionn_app_w512.v: one interface's engines, width
  adapters, side-band FIFOs and registers, for 64- and 512-bit interface streams.
- rtl/inceptionn_tx.v, inceptionn_rx.v: the engines (256-bit datapath, 250 MHz); at
  512 bits the core holds two of each side by side (lanes, frames merged in order).

The register map and what was verified are in the project's docs/corundum.md.
"""


def suite(if_count, nic_bits):
    """inceptionn_suite.py, the gradient tests both testbenches run, its register offsets filled in."""
    name = "inceptionn_suite.py"
    text = (_TB / name).read_text()
    regs = {r.name: r.offset for r in register_map(if_count, nic_bits)}
    body = "".join(f"    {k!r}: {v:#05x},\n" for k, v in regs.items())
    for old, new in (("REGS: dict = {}", "REGS: dict = {\n" + body + "}"),
                     ("APP_ID = 0\n", f"APP_ID = {APP_MAGIC:#010x}\n")):
        if old not in text:
            raise RuntimeError(f"{name}: no {old.strip()!r} line to fill in")
        text = text.replace(old, new, 1)
    return text


def sume_tests():
    """test_inceptionn_sume.py: the suite in the NetFPGA SUME core testbench (XGMII MAC)."""
    return (_TB / "test_inceptionn_sume.py").read_text()


def app_tests():
    """test_inceptionn_app.py: the suite in the template app testbench (512-bit AXI-stream MAC)."""
    return (_TB / "test_inceptionn_app.py").read_text()


def tests_100g():
    """test_inceptionn_100g.py: the suite in the 100G core testbenches (Alveo, VCU118;
    512-bit MAC models)."""
    return (_TB / "test_inceptionn_100g.py").read_text()


def rates_common():
    """inceptionn_rates.py: the rates benchmarks' measurements (both benchmarks import it)."""
    return (_TB / "inceptionn_rates.py").read_text()


def rates_bench():
    """test_inceptionn_rates.py: the rates and latency benchmark in the SUME testbench (it
    uses inceptionn_rates.py's, the suite's and the SUME test's functions)."""
    return (_TB / "test_inceptionn_rates.py").read_text()


def rates_bench_100g():
    """test_inceptionn_rates_100g.py: the rates and latency benchmark in the 100G core
    testbenches (it uses inceptionn_rates.py's, the suite's and test_inceptionn_100g.py's)."""
    return (_TB / "test_inceptionn_rates_100g.py").read_text()
