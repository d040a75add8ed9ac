"""INCEPTIONN: gradient-compressing NIC engines, their bit-exact model and host tools.

Subpackages:
  inceptionn.golden   bit-exact NumPy model of the wire format (spec/wire-format)
  inceptionn.hw       Amaranth HDL engines
  inceptionn.rtl      Verilog generation, the Verilator runner, the compiled engine loop,
                      the hardware benchmarks
  inceptionn.sim      cocotb testbenches (source checkout; the product never imports it)
  inceptionn.drivers  host side: socket tagging, training demo helpers
  inceptionn.bench    the benchmarks' logic (`inceptionn bench NAME`)
  inceptionn.study    the five papers' study (the study/ folder; `inceptionn study`)
"""

__version__ = "0.1.0"
