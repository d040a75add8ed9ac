"""`inceptionn corundum`: bad input is one line on stderr, status 2, and nothing written;
the install's plan from a minimal stand-in of a Corundum checkout (the few files the
install reads), so that this runs without Corundum."""

import pytest

from inceptionn.cli import main

# The files the install reads from a checkout, with just the lines it changes.
_TB_MAKEFILE = """TOPLEVEL_LANG = verilog
DUT      = {dut}
MODULE   = test_$(DUT)
VERILOG_SOURCES += ../../rtl/{dut}.v
VERILOG_SOURCES += ../../rtl/mqnic_app_block.v
export PARAM_IF_COUNT := {ifs}
export PARAM_APP_ID := $(shell echo $$((0x00000000)) )
export PARAM_APP_ENABLE := 0
"""
_VIVADO_MAKEFILE = "FPGA_PART = xc7vx690tffg1761-3\nFPGA_TOP = fpga\nSYN_FILES = rtl/fpga.v\nSYN_FILES += rtl/common/mqnic_core.v\n"
_CONFIG = ('set board_device_id [expr 0x7028]\n'
           'dict set params APP_ID "32\'h00000000"\ndict set params APP_ENABLE "0"\n')


def sume_top():
    """A stand-in of the SUME's rtl/fpga.v: its port list (the VC709 table's, with the
    SUME's `led` and `sfp_clk_rst`) and the lines the VC709 version changes."""
    from inceptionn.hw.corundum.vc709_pins import PORTS
    ports = {"led": ("output", 2)}
    ports.update({("sfp_clk_rst" if n == "si5324_rst_n" else n): dw for n, dw in PORTS.items()})
    lines = [f"    {d:6s} wire {f'[{w - 1}:0]' if w > 1 else '':5s} {n}," for n, (d, w) in ports.items()]
    lines[-1] = lines[-1].rstrip(",")
    return ("module fpga #\n(\n    parameter BOARD_ID = 32'h10ee_7028,\n    parameter IF_COUNT = 2\n)\n(\n"
            + "\n".join(lines) + "\n);\n\nwire rst_125mhz_int = 1'b0;\nwire [1:0] led_int;\n"
            "assign i2c_mux_reset = rst_125mhz_int;\nassign sfp_clk_rst = rst_125mhz_int;\n"
            "assign led = led_int;\nendmodule\n")


def stand_in(root):
    files = {
        "fpga/app/template/rtl/mqnic_app_block.v": "module mqnic_app_block; endmodule\n",
        "fpga/app/template/tb/mqnic_core_pcie_us/Makefile":
            _TB_MAKEFILE.format(dut="mqnic_core_pcie_us", ifs=1),
        "fpga/app/template/tb/mqnic_core_pcie_us/test_mqnic_core_pcie_us.py": "# tb\n",
        "fpga/app/template/tb/mqnic_core_pcie_us/mqnic.py": "# driver\n",
        "fpga/common/rtl/mqnic_core.v": "module mqnic_core; endmodule\n",
        "fpga/mqnic/NetFPGA_SUME/fpga/fpga/Makefile": _VIVADO_MAKEFILE,
        "fpga/mqnic/NetFPGA_SUME/fpga/Makefile": "SUBDIRS = fpga\n",
        "fpga/mqnic/NetFPGA_SUME/fpga/rtl/fpga.v": sume_top(),
        "fpga/mqnic/NetFPGA_SUME/fpga/rtl/fpga_core.v": "module fpga_core; endmodule\n",
        "fpga/mqnic/NetFPGA_SUME/fpga/pcie.xdc": "# pcie\n",
        "fpga/mqnic/NetFPGA_SUME/fpga/common/vivado.mk": "# vivado\n",
        "fpga/mqnic/NetFPGA_SUME/fpga/ip/pcie3_7x_0.tcl": "# ip\n",
        "fpga/mqnic/NetFPGA_SUME/fpga/fpga/config.tcl": _CONFIG,
        "fpga/mqnic/NetFPGA_SUME/fpga/tb/fpga_core/Makefile":
            _TB_MAKEFILE.format(dut="fpga_core", ifs=2),
        "fpga/mqnic/NetFPGA_SUME/fpga/tb/fpga_core/test_fpga_core.py": "# tb\n",
        "fpga/mqnic/NetFPGA_SUME/fpga/tb/fpga_core/mqnic.py": "# driver\n",
        # The Alveo 100G design: the core testbench and the U280 / U250 build folders.
        "fpga/mqnic/Alveo/fpga_100g/tb/fpga_core/Makefile":
            _TB_MAKEFILE.format(dut="fpga_core", ifs=2),
        "fpga/mqnic/Alveo/fpga_100g/tb/fpga_core/test_fpga_core.py": "# tb\n",
        "fpga/mqnic/Alveo/fpga_100g/tb/fpga_core/test_fpga_core.v": "// tb top\n",
        "fpga/mqnic/Alveo/fpga_100g/tb/fpga_core/mqnic.py": "# driver\n",
        **{f"fpga/mqnic/Alveo/fpga_100g/fpga_{b}/{name}": text for b in ("AU280", "AU250")
           for name, text in (("Makefile", _VIVADO_MAKEFILE), ("config.tcl", _CONFIG))},
        "fpga/mqnic/VCU118/fpga_100g/tb/fpga_core/Makefile":
            _TB_MAKEFILE.format(dut="fpga_core", ifs=2),
        "fpga/mqnic/VCU118/fpga_100g/tb/fpga_core/test_fpga_core.py": "# tb\n",
        "fpga/mqnic/VCU118/fpga_100g/fpga/Makefile": _VIVADO_MAKEFILE,
        "fpga/mqnic/VCU118/fpga_100g/fpga/config.tcl": _CONFIG,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _tree_files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


@pytest.mark.parametrize("case,msg", [
    ("missing", "no such folder"),
    ("empty", "not a Corundum checkout"),
    ("partial", "not a Corundum checkout (missing fpga/mqnic/NetFPGA_SUME/fpga/fpga/config.tcl)"),
    ("board", "board 'VCU118' not supported"),
])
def test_bad_input_exits_2_and_writes_nothing(tmp_path, capsys, case, msg):
    root = tmp_path / "corundum"
    argv = ["corundum", "--tree", str(root)]
    if case != "missing":
        root.mkdir()
    if case in ("partial", "board"):
        stand_in(root)
    if case == "partial":
        (root / "fpga/mqnic/NetFPGA_SUME/fpga/fpga/config.tcl").unlink()
    if case == "board":
        argv += ["--board", "VCU118"]
    before = _tree_files(root) if root.exists() else None
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "\n" not in err, err
    assert (_tree_files(root) if root.exists() else None) == before


def test_makefile_without_the_app_lines_is_refused(tmp_path, capsys):
    root = stand_in(tmp_path)
    mk = root / "fpga/mqnic/NetFPGA_SUME/fpga/tb/fpga_core/Makefile"
    mk.write_text(mk.read_text().replace("export PARAM_APP_ENABLE := 0\n", ""))
    before = _tree_files(root)
    assert main(["corundum", "--tree", str(root)]) == 2
    assert "PARAM_APP_ENABLE" in capsys.readouterr().err
    assert _tree_files(root) == before


def test_plan_turns_the_app_on(tmp_path, monkeypatch):
    from inceptionn.hw.corundum import install as corundum
    from inceptionn.hw.corundum.shell import APP_ID
    root = stand_in(tmp_path)
    # The Verilog is checked elsewhere; here the changes to the user's files.
    monkeypatch.setattr(corundum, "_sources", lambda: dict.fromkeys(
        ["mqnic_app_block.v", "inceptionn_app_w64.v", "inceptionn_app_w512.v",
         "inceptionn_tx.v", "inceptionn_rx.v"], ""))
    files = {str(k): v for k, v in corundum.plan(root, "NetFPGA_SUME").items()}
    tb = files["fpga/mqnic/NetFPGA_SUME/fpga/tb/fpga_core_inceptionn/Makefile"]
    assert "PARAM_APP_ENABLE := 1" in tb and f"0x{APP_ID:08x}" in tb
    assert "VERILOG_SOURCES += ../../app/inceptionn/rtl/inceptionn_tx.v" in tb
    assert "rtl/mqnic_app_block.v\n" not in tb.replace("app/inceptionn/rtl/mqnic_app_block.v", "")
    assert "MODULE   = test_fpga_core,test_inceptionn_sume" in tb
    cfg = files["fpga/mqnic/NetFPGA_SUME/fpga/fpga_app_inceptionn/config.tcl"]
    assert 'APP_ENABLE "1"' in cfg and f"32'h{APP_ID:08x}" in cfg
    mk = files["fpga/mqnic/NetFPGA_SUME/fpga/fpga_app_inceptionn/Makefile"]
    assert mk.index("app/inceptionn/rtl/inceptionn_rx.v") < mk.index("rtl/common/mqnic_core.v")
    sume = files["fpga/mqnic/NetFPGA_SUME/fpga/tb/fpga_core_inceptionn/inceptionn_suite.py"]
    assert "'if1.rx.malformed'" in sume and f"APP_ID = {APP_ID:#010x}" in sume
    assert "run_suite" in files["fpga/mqnic/NetFPGA_SUME/fpga/tb/fpga_core_inceptionn/test_inceptionn_sume.py"]
    # The template app testbench (512 bits) runs the same suite after Corundum's own test.
    app_tb = "fpga/app/inceptionn/tb/mqnic_core_pcie_us/"
    assert "MODULE   = test_mqnic_core_pcie_us,test_inceptionn_app" in files[app_tb + "Makefile"]
    assert f"APP_ID = {APP_ID:#010x}" in files[app_tb + "inceptionn_suite.py"]
    assert "run_suite" in files[app_tb + "test_inceptionn_app.py"]
    assert files["fpga/app/inceptionn/rtl/common"] == ("link", "../../../common/rtl/")
    # The Alveo 100G design: U280 and U250 build folders and the core testbench at 512 bits.
    alveo = "fpga/mqnic/Alveo/fpga_100g/"
    for b in ("AU280", "AU250"):
        assert 'APP_ENABLE "1"' in files[alveo + f"fpga_{b}_app_inceptionn/config.tcl"]
        assert "app/inceptionn/rtl/inceptionn_tx.v" in files[alveo + f"fpga_{b}_app_inceptionn/Makefile"]
    vcu = "fpga/mqnic/VCU118/fpga_100g/"
    assert 'APP_ENABLE "1"' in files[vcu + "fpga_app_inceptionn/config.tcl"]
    for atb in (alveo + "tb/fpga_core_inceptionn/", vcu + "tb/fpga_core_inceptionn/"):
        assert "MODULE   = test_fpga_core,test_inceptionn_100g" in files[atb + "Makefile"]
        assert "PARAM_APP_ENABLE := 1" in files[atb + "Makefile"]
        assert "'if1.rx.malformed'" in files[atb + "inceptionn_suite.py"]
        assert "qsfp_mac[0]" in files[atb + "test_inceptionn_100g.py"]
        # The rates benchmark at 100G, beside the measurements it shares with the SUME's.
        assert "from test_inceptionn_100g import" in files[atb + "test_inceptionn_rates_100g.py"]
        assert files[atb + "inceptionn_rates.py"] == files[
            "fpga/mqnic/NetFPGA_SUME/fpga/tb/fpga_core_inceptionn/inceptionn_rates.py"]
    assert files[alveo + "tb/fpga_core_inceptionn/test_fpga_core.v"] == "// tb top\n"


def test_docs_show_the_register_map():
    from pathlib import Path
    from inceptionn.hw.corundum.regmap import markdown_table
    doc = (Path(__file__).resolve().parent.parent / "docs" / "corundum.md").read_text()
    assert markdown_table() in doc, "docs/corundum.md's register table is not the map's"
