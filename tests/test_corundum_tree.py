"""The install into a real Corundum checkout, given by CORUNDUM=PATH (skipped without):
into a copy of its fpga/ folder (the checkout itself is left alone), then Corundum's
SUME core with the app, and its template app testbench's core, elaborated by Icarus the
way their testbenches build them (needs iverilog and the cocotb 1.8 environment of
`make corundum-sim`, .venv-corundum; minutes). The full testbench runs are
`make corundum-sim`."""

import os
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
    from inceptionn.commands.corundum import install
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
