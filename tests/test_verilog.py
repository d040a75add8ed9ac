"""`make verilog`: reproducible Verilog under AXI-stream names, lint-clean under
`verilator --lint-only -Wall` with only the waivers documented in inceptionn.rtl.lint."""

import re

import pytest
from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from inceptionn import cli
from inceptionn.commands import verilog
from inceptionn.rtl import lint as verilog_lint

TARGETS = verilog.engine_factories()
BLOCKS = verilog.blocks()

AXIS_PORTS = ["s_axis_tdata", "s_axis_tkeep", "s_axis_tlast", "s_axis_tuser", "s_axis_tvalid",
              "s_axis_tready", "m_axis_tdata", "m_axis_tkeep", "m_axis_tlast", "m_axis_tuser",
              "m_axis_tvalid", "m_axis_tready"]


@pytest.mark.long
@pytest.mark.parametrize("name,factory", TARGETS, ids=[t[0] for t in TARGETS])
def test_reproducible_axi_named_and_lint_clean(tmp_path, name, factory):
    # Reproducibility (the same tree gives the same bytes) is checked across processes and
    # installs by tests/test_wheel.py::test_verilog; here the conversion is the shared one.
    a = verilog.generate(factory, name)
    assert "(* src" not in a and ".py:" not in a, "source locations leaked into the Verilog"
    header = re.search(rf"module {name}\((.*?)\);", a, re.S).group(1)
    ports = {p.strip() for p in header.split(",")}
    assert set(AXIS_PORTS) <= ports
    assert re.search(r"input \[255:0\] s_axis_tdata;", a)
    # Started at time zero under Icarus -g2012 (inceptionn/rtl/icarus.py), lines the
    # other tools do not read.
    assert "`ifdef __ICARUS__\n" in a and "initial #0 " in a
    path = tmp_path / f"{name}.v"
    path.write_text(a)
    res = verilog_lint.lint(path, name)
    assert res.ok, "\n".join(res.errors[:30])


class _Sloppy(wiring.Component):
    """An unused input and a register nobody reads: what the lint must still catch."""

    def __init__(self):
        super().__init__({"a": In(8), "unused_in": In(4), "y": Out(8)})

    def elaborate(self, platform):
        m = Module()
        waste = Signal(8)
        m.d.sync += [waste.eq(self.a + 3), self.y.eq(self.a + 1)]
        return m


def test_lint_catches_unused_signals_and_waives_only_aliases(tmp_path):
    path = tmp_path / "sloppy.v"
    path.write_text(verilog.generate(_Sloppy(), "sloppy"))
    res = verilog_lint.lint(path, "sloppy")
    assert not res.ok
    text = "\n".join(res.errors)
    assert "'waste'" in text and "'unused_in'" in text
    assert all("UNUSEDSIGNAL" in e or "UNUSEDINPUT" in e for e in res.errors)


def test_make_verilog_cli(tmp_path, capsys, monkeypatch):
    # The CLI plumbing, on a small stand-in (the engines themselves are converted and
    # linted above): files written, lint run and reported.
    slice_ = [b for b in BLOCKS if b[0] == "axis_register_slice"]
    monkeypatch.setattr(verilog, "engine_factories", lambda: slice_)
    assert cli.main(["verilog", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "axis_register_slice.v").read_text() == \
        verilog.generate(slice_[0][1], "axis_register_slice")
    assert "axis_register_slice" in out and "lint: clean" in out
    monkeypatch.setattr(verilog, "engine_factories", lambda: [("sloppy", lambda: _Sloppy())])
    assert cli.main(["verilog", "-o", str(tmp_path)]) == 1
    assert "'waste'" in capsys.readouterr().out


def test_alias_waiver_ignores_attribute_lines():
    """A debug alias named like an attribute (`keep`) is still an alias: attribute
    lines are not uses of the signal; a real read is."""
    lines = ["module m(a, y);", "  input a;", "  output y;", "  wire keep;",
             "  (* keep = 32'd1 *)", "  wire x;", "  assign keep = a;", "  assign x = a;",
             "  assign y = x;", "endmodule"]
    assert verilog_lint._is_alias(lines, 4, "keep")
    read = lines[:-1] + ["  assign z = keep;", "endmodule"]
    assert not verilog_lint._is_alias(read, 4, "keep")
