"""The VC709 board folder the install writes (hw/corundum/vc709_board.py), without a
Corundum checkout: the constraints are well-formed (every pin once, every port bit of
the top constrained, nothing else), the SUME top is changed where the boards differ,
and a SUME file without a line the change needs is refused. The elaboration against
Corundum's core is in tests/test_corundum_tree.py (needs a checkout)."""

import re
from dataclasses import replace

import pytest

from inceptionn.hw.corundum import vc709_board
from inceptionn.hw.corundum.vc709_pins import PINS, PORTS
from test_corundum_cli import stand_in, sume_top

_LOC = re.compile(r"^set_property -dict \{LOC (\w+)[^}]*\} \[get_ports \{?([\w\[\]]+)\}?\]", re.M)


def _constrained(xdc):
    """[(port bit, pin)] of the XDC's LOC lines, read back from the text."""
    return [(port, loc) for loc, port in _LOC.findall(xdc)]


def test_xdc_constrains_every_port_bit_once_with_unique_pins():
    got = _constrained(vc709_board.xdc())
    ports = [p for p, _ in got]
    locs = [loc for _, loc in got]
    want = {f"{n}[{i}]" if w > 1 else n for n, (_, w) in PORTS.items() for i in range(w)}
    assert len(got) == len(PINS) == len(want) == 93
    assert set(ports) == want and len(set(ports)) == len(ports)
    assert len(set(locs)) == len(locs)
    assert vc709_board.check_top(PORTS) == []


def test_xdc_clocks_and_io_standards():
    x = vc709_board.xdc()
    for clk in ("clk_200mhz_p", "pcie_mgt_refclk_p", "sfp_mgt_refclk_p"):
        assert re.search(rf"create_clock -period [\d.]+ -name \w+ \[get_ports {clk}\]", x)
    # Transceiver pins carry no I/O standard; every other pin does.
    for p in PINS:
        gt = p.port.startswith(("pcie_rx", "pcie_tx", "pcie_mgt", "sfp_mgt")) or \
            re.match(r"sfp_\d_(rx|tx)_[pn]$", p.port)
        assert bool(p.iostandard) != bool(gt), p
    assert "xc7vx690tffg1761-2" in x


@pytest.mark.parametrize("fault,expect", [
    ("dup_pin", "pin AV35 used by"),
    ("missing", "port sfp_4_los has no pin"),
    ("extra", "pin led[0] for no port"),
])
def test_check_top_finds_what_is_wrong(fault, expect):
    pins = list(PINS)
    if fault == "dup_pin":
        pins[0] = replace(pins[0], loc="AV35")
    elif fault == "missing":
        pins = [p for p in pins if p.port != "sfp_4_los"]
    else:
        pins.append(replace(pins[0], port="led[0]", loc="ZZ1"))
    problems = vc709_board.check_top(PORTS, pins)
    assert any(expect in x for x in problems), problems


def test_top_from_the_sume_top():
    v = vc709_board.fpga_v(sume_top())
    assert vc709_board.top_ports(v) == PORTS
    assert "assign si5324_rst_n = !rst_125mhz_int;" in v
    assert "assign i2c_mux_reset = !rst_125mhz_int;" in v
    assert "parameter BOARD_ID = 32'h10ee_7038," in v
    assert "wire [1:0] led;" in v and "assign led = led_int;" in v


def test_a_sume_top_without_a_changed_line_is_refused():
    text = sume_top().replace("assign sfp_clk_rst = rst_125mhz_int;\n", "")
    with pytest.raises(vc709_board.BoardError, match="sfp_clk_rst"):
        vc709_board.fpga_v(text)


def test_install_writes_the_board_folder(tmp_path, monkeypatch):
    from inceptionn.hw.corundum import install as corundum
    from inceptionn.hw.corundum.shell import APP_ID
    root = stand_in(tmp_path)
    monkeypatch.setattr(corundum, "_sources", lambda: dict.fromkeys(
        ["mqnic_app_block.v", "inceptionn_app_w64.v", "inceptionn_app_w512.v",
         "inceptionn_tx.v", "inceptionn_rx.v"], ""))
    files = {str(k): v for k, v in corundum.plan(root, "NetFPGA_SUME").items()}
    vc = "fpga/mqnic/VC709/fpga/"
    assert vc709_board.top_ports(files[vc + "rtl/fpga.v"]) == PORTS
    assert files[vc + "fpga.xdc"] == vc709_board.xdc()
    assert files[vc + "fpga/Makefile"].startswith("FPGA_PART = xc7vx690tffg1761-2\n")
    assert "set board_device_id [expr 0x7038]" in files[vc + "fpga/config.tcl"]
    assert 'APP_ENABLE "1"' not in files[vc + "fpga/config.tcl"]
    app_cfg = files[vc + "fpga_app_inceptionn/config.tcl"]
    assert 'APP_ENABLE "1"' in app_cfg and f"32'h{APP_ID:08x}" in app_cfg
    assert "app/inceptionn/rtl/inceptionn_tx.v" in files[vc + "fpga_app_inceptionn/Makefile"]
    assert files[vc + "rtl/common"] == ("link", "../../../../common/rtl/")
    assert files[vc + "ip/pcie3_7x_0.tcl"] == "# ip\n"


def test_install_refuses_a_sume_top_whose_ports_changed(tmp_path, capsys):
    from inceptionn.cli import main
    root = stand_in(tmp_path)
    top = root / "fpga/mqnic/NetFPGA_SUME/fpga/rtl/fpga.v"
    top.write_text(re.sub(r"^.*\bsfp_4_los,\n", "", top.read_text(), flags=re.M))
    assert main(["corundum", "--tree", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert "pin sfp_4_los for no port of the top" in err and "\n" not in err, err
    assert not (root / "fpga/mqnic/VC709").exists()


def test_vendor_stubs_cover_what_no_source_defines():
    v = ("module fpga (input wire a, output wire b);\n"
         "IBUFGDS #(\n   .DIFF_TERM(\"FALSE\")\n)\nbuf_inst (\n   .O(x),\n   .I(a),\n   .IB(a)\n);\n"
         "mine mine_inst (.a(a), .b(b));\nendmodule\n")
    stubs = vc709_board.vendor_stubs(v, {"fpga", "mine"})
    assert "module IBUFGDS #(parameter DIFF_TERM = 0) (I, IB, O);" in stubs
    assert "module mine" not in stubs and "module fpga" not in stubs
