"""The install into a real Corundum checkout, given by CORUNDUM=PATH (skipped without):
into a copy of its fpga/ folder (the checkout itself is left alone), then Corundum's
SUME core with the app, and its template app testbench's core, elaborated by Icarus the
way their testbenches build them (needs iverilog and the cocotb 1.8 environment of
`make corundum-sim`, .venv-corundum; minutes); the VC709 board top with Corundum's core
and the app, elaborated by Icarus (the Xilinx primitives and IP cores as empty stubs). The full testbench runs are
`make corundum-sim`."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from inceptionn.rtl.harness import REPO

CORUNDUM = os.environ.get("CORUNDUM")
pytestmark = pytest.mark.skipif(not CORUNDUM, reason="no Corundum checkout: set CORUNDUM=PATH "
                                                     "(make corundum CORUNDUM=PATH installs into one)")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("corundum")
    shutil.copytree(Path(CORUNDUM) / "fpga", root / "fpga", symlinks=True)
    from inceptionn.hw.corundum.install import install
    install(root)
    return root


def test_install_writes_the_app_and_turns_it_on(tree):
    app = tree / "fpga/app/inceptionn"
    for name in ("mqnic_app_block.v", "inceptionn_app_w64.v", "inceptionn_app_w512.v",
                 "inceptionn_tx.v", "inceptionn_rx.v"):
        assert (app / "rtl" / name).stat().st_size > 0
    assert (app / "rtl/common/mqnic_core.v").is_file()         # the link resolves
    sume = tree / "fpga/mqnic/NetFPGA_SUME/fpga"
    assert 'APP_ENABLE "1"' in (sume / "fpga_app_inceptionn/config.tcl").read_text()
    assert "PARAM_APP_ENABLE := 1" in (sume / "tb/fpga_core_inceptionn/Makefile").read_text()


def _elaborate(folder):
    venv = (REPO or Path.cwd()) / ".venv-corundum" / "bin"
    if not shutil.which("iverilog") or not (venv / "cocotb-config").exists():
        pytest.skip("needs iverilog and .venv-corundum (make corundum-sim builds both)")
    env = dict(os.environ, PATH=f"{venv}{os.pathsep}{os.environ['PATH']}")
    r = subprocess.run(["make", "-C", str(folder), "SIM=icarus", "sim_build/sim.vvp"],
                       env=env, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (folder / "sim_build/sim.vvp").is_file()


def test_sume_core_elaborates_with_the_app(tree):
    _elaborate(tree / "fpga/mqnic/NetFPGA_SUME/fpga/tb/fpga_core_inceptionn")


def test_template_core_elaborates_with_the_app(tree):
    _elaborate(tree / "fpga/app/inceptionn/tb/mqnic_core_pcie_us")


def test_vc709_top_elaborates_with_corundums_core_and_the_app(tree, tmp_path):
    from inceptionn.hw.corundum.shell import APP_ID
    from inceptionn.hw.corundum.vc709_board import top_ports, vendor_stubs
    from inceptionn.hw.corundum.vc709_pins import PORTS
    vc = tree / "fpga/mqnic/VC709/fpga/rtl"
    top = (vc / "fpga.v").read_text()
    assert top_ports(top) == PORTS
    if not shutil.which("iverilog"):
        pytest.skip("needs iverilog (make corundum-sim installs it)")
    # Corundum's sources as the SUME core's testbench lists them, the VC709's own rtl.
    tb = tree / "fpga/mqnic/NetFPGA_SUME/fpga/tb/fpga_core_inceptionn"
    sources = []
    for m in re.finditer(r"^VERILOG_SOURCES \+= (\S+)$", (tb / "Makefile").read_text(), re.M):
        rel = m.group(1).replace("$(DUT)", "fpga_core")
        sources.append(vc / "fpga_core.v" if rel.endswith("rtl/fpga_core.v") else tb / rel)
    sources += [v for v in sorted(vc.glob("*.v")) if v.name != "fpga_core.v"]
    defined = set()
    for v in sources:
        defined |= set(re.findall(r"^\s*module\s+(\w+)", v.read_text(), re.M))
    stubs = tmp_path / "vendor_stubs.v"
    stubs.write_text(vendor_stubs(top, defined))
    r = subprocess.run(["iverilog", "-g2012", "-s", "fpga", "-o", str(tmp_path / "vc709.vvp"),
                        "-P", "fpga.IF_COUNT=1", "-P", "fpga.APP_ENABLE=1",
                        "-P", f"fpga.APP_ID={APP_ID}", *map(str, sources), str(stubs)],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert (tmp_path / "vc709.vvp").stat().st_size > 0
