"""INCEPTIONN: gradient-compressing NIC engines, their bit-exact model and host tools.

Subpackages:
  inceptionn.golden   bit-exact NumPy model of the wire format (spec/wire-format)
  inceptionn.hw       Amaranth HDL engines
  inceptionn.sim      cocotb testbenches and the Verilator harness
  inceptionn.drivers  host side: socket tagging, training demo helpers
"""

__version__ = "0.1.0"
