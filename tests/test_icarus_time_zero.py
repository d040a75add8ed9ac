"""The app's Verilog under Icarus in SystemVerilog mode (inceptionn/rtl/icarus.py): a
combinational block whose inputs are registers that keep their initial values must still
compute its output (it stayed X before, which stalled Corundum's 100G testbench)."""

import shutil
import subprocess

import pytest
from amaranth import Array, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from inceptionn.rtl.harness import convert_uncached
from inceptionn.rtl.icarus import kick_time_zero

TB = """`timescale 1ns/1ps
module tb;
reg clk = 0, rst = 0, go = 0;
wire o;
held dut(.clk(clk), .rst(rst), .go(go), .o(o));
initial begin #5 $display("o=%b", o); $finish; end
endmodule
"""


class Held(wiring.Component):
    """o = [a, b][sel]: a lane-select mux as the lanes' ready is; sel, a and b change only
    when go is high, which the testbench never sets."""

    go: In(1)
    o: Out(1)

    def elaborate(self, platform):
        m = Module()
        sel, a, b = Signal(), Signal(init=1), Signal()
        with m.If(self.go):
            m.d.sync += [sel.eq(~sel), a.eq(~a), b.eq(~b)]
        m.d.comb += self.o.eq(Array([a, b])[sel])
        return m


def _run(tmp_path, text):
    (tmp_path / "held.v").write_text(text)
    (tmp_path / "tb.v").write_text(TB)
    subprocess.run(["iverilog", "-g2012", "-s", "tb", "-o", str(tmp_path / "tb.vvp"),
                    str(tmp_path / "tb.v"), str(tmp_path / "held.v")],
                   check=True, capture_output=True)
    out = subprocess.run(["vvp", "-n", str(tmp_path / "tb.vvp")], check=True,
                         capture_output=True, text=True).stdout
    return out.split("o=")[1][0]


def test_kick_is_idempotent_and_icarus_only():
    text = convert_uncached(Held(), "held")
    once = kick_time_zero(text)
    assert once != text and kick_time_zero(once) == once
    added = [ln for ln in once.splitlines() if ln not in text.splitlines()]
    assert added[0] == "`ifdef __ICARUS__" and added[-1] == "`endif"


@pytest.mark.skipif(not shutil.which("iverilog"), reason="needs iverilog")
def test_comb_block_runs_at_time_zero(tmp_path):
    text = convert_uncached(Held(), "held")
    assert _run(tmp_path, text) == "x"            # Yosys's own dummy event is not enough
    assert _run(tmp_path, kick_time_zero(text)) == "1"
