"""Amaranth's Verilog made to start right under Icarus Verilog in SystemVerilog mode.

Yosys's `write_verilog` puts the combinational logic in `always @*` blocks and gives each
module a dummy register (`reg \\$auto$verilog_backend.cc:N:dump_module$M = 0;`) that
every such block reads, so that its initialisation is an event at time zero and every
block runs once. Under Icarus with `-g2012` (cocotb's and so Corundum's testbenches) a
declaration's initial value is set before time zero without an event; a block whose
inputs are all registers that keep their initial values after reset (a lane index that
is 0 until the first frame ends, FIFO readies that stay 1) then never runs and its
output stays X. In the 512-bit app that X was the TX lanes' ready: Corundum's first
frame never entered the block.

`kick_time_zero` adds, for Icarus only (`__ICARUS__`), a change of each dummy register
in the inactive region of time zero, after every `always @*` block has started waiting:
each runs once, as SystemVerilog's `always_comb` would. Verilator, Yosys and Vivado read
the same text without the lines.
"""

import re

__all__ = ["kick_time_zero"]

_DUMMY = re.compile(r"^(?P<indent>[ \t]*)reg (?P<name>\\\S*dump_module\$\d+) += 0;\n", re.M)


def kick_time_zero(text):
    """`text` with each of Yosys's time-zero dummy registers changed at #0 under Icarus.
    Applying it twice gives the same text."""
    if "`ifdef __ICARUS__" in text:
        return text

    def kick(m):
        return (f"{m.group(0)}`ifdef __ICARUS__\n"
                f"{m.group('indent')}initial #0 {m.group('name')} = 1'b1;\n`endif\n")
    return _DUMMY.sub(kick, text)
