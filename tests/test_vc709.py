"""The VC709 platform and `make vc709` (Vivado build tree of the board self-test)."""

import re

import pytest

from inceptionn import cli
from inceptionn.commands import vc709, verilog
from inceptionn.hw.platform import VC709Platform


def _pins(platform):
    out = {}
    for r in platform.resources.values():
        io = r.ios[0]
        names = io.p.names + io.n.names if hasattr(io, "p") else io.names
        out[(r.name, r.number)] = (names, dict(r.attrs))
    return out


def test_platform_part_and_clock():
    p = VC709Platform()
    assert (p.device, p.package, p.speed) == ("xc7vx690t", "ffg1761", "2")
    assert p._part == "xc7vx690tffg1761-2"
    clk = p.lookup("clk200", 0)
    assert clk.clock.frequency == 200e6
    assert clk.ios[0].p.names == ["H19"] and clk.ios[0].n.names == ["G18"]
    assert clk.attrs["IOSTANDARD"] == "DIFF_SSTL15"


def test_platform_user_io():
    p = VC709Platform()
    pins = _pins(p)
    leds = [pins[("led", i)][0][0] for i in range(8)]
    assert leds == "AM39 AN39 AR37 AT37 AR35 AP41 AP42 AU39".split()
    dips = [pins[("dip_switch", i)][0][0] for i in range(8)]
    assert dips == "AV30 AY33 BA31 BA32 AW30 AY30 BA30 BB31".split()
    for name in ("button_n", "button_e", "button_s", "button_w", "button_c", "cpu_reset"):
        assert pins[(name, 0)][1]["IOSTANDARD"] == "LVCMOS18"
    every = [pin for names, _ in pins.values() for pin in names]
    assert len(every) == len(set(every)), "a pin is assigned twice"
    assert p.lookup("sfp_refclk", 0).clock.frequency == 156.25e6


@pytest.fixture(scope="module")
def wire_tree(tmp_path_factory):
    out = tmp_path_factory.mktemp("vc709_wire")
    vc709.build_tree(out, engines=False)
    return out


@pytest.mark.long
def test_tree_is_complete(wire_tree):
    for f in ("top.v", "top.xdc", "top.tcl", "build_top.sh"):
        assert (wire_tree / f).stat().st_size > 0, f
    xdc = (wire_tree / "top.xdc").read_text()
    assert re.search(r"set_property LOC H19 \[get_ports \"clk200_0__p\"\]", xdc)
    assert re.search(r"create_clock -name clk200_0__p -period 5\.0 ", xdc)
    for i, pin in enumerate("AM39 AN39 AR37 AT37 AR35 AP41 AP42 AU39".split()):
        assert f'set_property LOC {pin} [get_ports "led_{i}__io"]' in xdc
    assert 'set_property LOC AV30 [get_ports "dip_switch_0__io"]' in xdc
    tcl = (wire_tree / "top.tcl").read_text()
    assert "create_project -force -name top -part xc7vx690tffg1761-2" in tcl
    assert "write_bitstream" in tcl
    v = (wire_tree / "top.v").read_text()
    assert "MMCME2_BASE" in v and re.search(r"\.CLKFBOUT_MULT_F\(5", v)
    assert re.search(r"\.CLKOUT0_DIVIDE_F\(4", v)
    assert "IBUFDS" in v and "BUFG" in v
    assert "(* src" not in v and ".py:" not in v, "source locations leaked into the Verilog"


@pytest.mark.long
def test_tree_is_reproducible(wire_tree, tmp_path):
    vc709.build_tree(tmp_path, engines=False)
    for f in ("top.v", "top.xdc", "top.tcl"):
        assert (tmp_path / f).read_bytes() == (wire_tree / f).read_bytes(), f


@pytest.mark.long
def test_tree_with_engines(tmp_path):
    # The engines are the shared conversions (`make verilog`'s files, byte for byte),
    # instantiated by top.v and read by Vivado's script; the codec is a constant on the
    # TX engine's port.
    vc709.build_tree(tmp_path, engines=True, codec="paper")
    v = (tmp_path / "top.v").read_text()
    tcl = (tmp_path / "top.tcl").read_text()
    for name, factory in verilog.engine_factories():
        assert (tmp_path / f"{name}.v").read_text() == verilog.generate(factory, name)
        assert re.search(rf"^\s*{name} engine \(", v, re.M), name
        assert not re.search(rf"^module {name}\b", v, re.M), f"{name} converted into top.v"
        assert f"{name}.v" in tcl
    tx = re.search(r"^\s*inceptionn_tx engine \((.*?)\);", v, re.M | re.S).group(1)
    assert re.search(r"\.codec\(1'h0\)", tx), "the paper codec is version 1 on the codec port"


def test_make_vc709_runs_vivado_only_when_asked(monkeypatch, tmp_path, capsys):
    calls = []

    def fake(out, *, engines, do_build, codec):
        calls.append((engines, do_build, codec))
        out.mkdir(parents=True, exist_ok=True)
        (out / "top.v").write_text("")
    monkeypatch.setattr(vc709, "build_tree", fake)
    monkeypatch.delenv("AMARANTH_ENV_VIVADO", raising=False)
    assert cli.main(["vc709", "-o", str(tmp_path), "--no-engines"]) == 0
    monkeypatch.setenv("AMARANTH_ENV_VIVADO", "/opt/Xilinx/Vivado/settings64.sh")
    assert cli.main(["vc709", "-o", str(tmp_path), "--no-engines", "--codec", "paper"]) == 0
    assert calls == [(False, False, "bounded"), (False, True, "paper")]
    assert "Vivado not run" in capsys.readouterr().out
