"""`inceptionn corundum --tree PATH`: installs the engines into a Corundum checkout as
its application block.

Writes, into the user's checkout (nothing of Corundum is kept in this project; the files
below that start from Corundum's own are read from the checkout and changed there):

- ``fpga/app/inceptionn/rtl/``: ``mqnic_app_block.v`` (the shell), the per-width cores
  ``inceptionn_app_w64.v`` and ``inceptionn_app_w512.v``, the engines
  ``inceptionn_tx.v`` and ``inceptionn_rx.v``; the ``rtl/common`` and ``lib`` links
  Corundum's template app has;
- ``fpga/app/inceptionn/tb/mqnic_core_pcie_us/``: the template app's testbench
  (Corundum's 512-bit core with the app), its Makefile pointed at this app;
- ``fpga/mqnic/NetFPGA_SUME/fpga/fpga_app_inceptionn/``: the SUME build folder
  (Corundum's ``fpga/Makefile`` and ``config.tcl`` with the app enabled), where ``make``
  builds a bitstream with Vivado;
- ``fpga/mqnic/NetFPGA_SUME/fpga/tb/fpga_core_inceptionn/``: the SUME core testbench
  with the app enabled, plus the gradient tests and the rates benchmark
  (``make MODULE=test_inceptionn_rates`` there; its measurements, ``inceptionn_rates.py``,
  are written into the 100G testbenches too);
- ``fpga/mqnic/VC709/fpga/``: a board folder for the VC709 (the SUME's FPGA), made from
  the SUME's with the VC709's pins (hw/corundum/vc709_board.py), with a build folder for
  Corundum alone (``fpga/``) and one with the app (``fpga_app_inceptionn/``);
- ``fpga/mqnic/Alveo/fpga_100g/fpga_AU280_app_inceptionn/`` and ``fpga_AU250_app_inceptionn/``:
  the Alveo 100G build folders (Corundum's ``fpga_AU280``, ``fpga_AU250`` with the app
  enabled; the engines at 512 bits, as lanes, with no width adapter);
- ``fpga/mqnic/Alveo/fpga_100g/tb/fpga_core_inceptionn/``: the Alveo 100G core testbench
  with the app enabled, plus the gradient tests on the 100G MAC models and the rates
  benchmark (``make MODULE=test_inceptionn_rates_100g`` there);
- ``fpga/mqnic/VCU118/fpga_100g/fpga_app_inceptionn/`` and ``tb/fpga_core_inceptionn/``:
  the same for the VCU118's 100G design.

Bad input (no such folder, not a Corundum tree, an unknown board): one line, status 2,
nothing written.
"""

import os
import re
from pathlib import Path


__all__ = ["APP", "BOARDS", "WIDTHS", "DESIGNS_100G", "board_dir", "check_tree", "plan", "install"]


APP = "inceptionn"


WIDTHS = (64, 512)                  # cores written: 10G boards, 100G boards (template tb)


# board -> its folder under fpga/mqnic and its interface stream width
BOARDS = {"NetFPGA_SUME": 64}


_TEMPLATE = Path("fpga/app/template")


_REQUIRED = [_TEMPLATE / "rtl/mqnic_app_block.v", _TEMPLATE / "tb/mqnic_core_pcie_us/Makefile",
             _TEMPLATE / "tb/mqnic_core_pcie_us/test_mqnic_core_pcie_us.py",
             _TEMPLATE / "tb/mqnic_core_pcie_us/mqnic.py", Path("fpga/common/rtl/mqnic_core.v")]


# The 100G designs (512-bit interface streams): design folder -> {Corundum's build folder:
# the one written beside it with the app}.
ALVEO = Path("fpga/mqnic/Alveo/fpga_100g")


ALVEO_BOARDS = ("AU280", "AU250")


VCU118 = Path("fpga/mqnic/VCU118/fpga_100g")


DESIGNS_100G = {ALVEO: {f"fpga_{b}": f"fpga_{b}_app_{APP}" for b in ALVEO_BOARDS},
                VCU118: {"fpga": f"fpga_app_{APP}"}}


def board_dir(board):
    return Path("fpga/mqnic") / board / "fpga"


def check_tree(tree, board):
    """The checkout's root as a Path, or ValueError naming what is missing."""
    tree = Path(tree)
    if board not in BOARDS:
        raise ValueError(f"board {board!r} not supported; supported: {', '.join(BOARDS)}")
    if not tree.is_dir():
        raise ValueError(f"{tree}: no such folder")
    sume = board_dir("NetFPGA_SUME")          # the VC709 folder is made from it
    need = _REQUIRED + [board_dir(board) / "fpga/Makefile", board_dir(board) / "fpga/config.tcl",
                        board_dir(board) / "tb/fpga_core/Makefile",
                        board_dir(board) / "tb/fpga_core/test_fpga_core.py",
                        sume / "Makefile", sume / "rtl/fpga.v", sume / "rtl/fpga_core.v",
                        sume / "pcie.xdc", sume / "common/vivado.mk", sume / "fpga/Makefile",
                        sume / "fpga/config.tcl",
                        *(d / f for d in DESIGNS_100G
                          for f in ("tb/fpga_core/Makefile", "tb/fpga_core/test_fpga_core.py")),
                        *(d / b / f for d, builds in DESIGNS_100G.items() for b in builds
                          for f in ("Makefile", "config.tcl"))]
    missing = [str(p) for p in need if not (tree / p).is_file()]
    if missing:
        raise ValueError(f"{tree}: not a Corundum checkout (missing {missing[0]})")
    return tree


def _sources():
    """{file name: Verilog} of the app's rtl folder."""
    from inceptionn.hw.corundum.app import AppConfig, InceptionnApp
    from inceptionn.hw.corundum.shell import shell_verilog
    from inceptionn.rtl import harness
    from inceptionn.rtl.designs import engine_designs
    from inceptionn.rtl.icarus import kick_time_zero
    out = {"mqnic_app_block.v": shell_verilog([AppConfig(nic_bits=w) for w in WIDTHS])}
    for w in WIDTHS:
        cfg = AppConfig(nic_bits=w)
        out[f"{cfg.module_name}.v"] = harness.convert_uncached(InceptionnApp(cfg), cfg.module_name)
    for module, factory in engine_designs():
        out[f"{module}.v"] = harness.to_verilog(factory, module)
    # Corundum's testbenches run Icarus in SystemVerilog mode (inceptionn/rtl/icarus.py).
    return {name: kick_time_zero(text) for name, text in out.items()}


def _app_files(rtl_rel):
    from inceptionn.rtl.blocks import engines
    return [f"{rtl_rel}/{name}" for name in
            ["mqnic_app_block.v", *(f"inceptionn_app_w{w}.v" for w in WIDTHS),
             *(f"{row.name}.v" for row in engines().values())]]


def _set_make_param(text, name, value, path):
    new, n = re.subn(rf"^(export PARAM_{name} :=).*$", rf"\g<1> {value}", text, flags=re.M)
    if n != 1:
        raise ValueError(f"{path}: no 'export PARAM_{name} :=' line to set")
    return new


def _set_tcl_param(text, name, value, path):
    new, n = re.subn(rf'^(dict set params {name}) .*$', rf'\g<1> "{value}"', text, flags=re.M)
    if n != 1:
        raise ValueError(f"{path}: no 'dict set params {name}' line to set")
    return new


def _tb_makefile(text, path, app_sources, modules):
    """A Corundum cocotb Makefile with this app in place of the template's or none."""
    from inceptionn.hw.corundum.shell import APP_ID
    lines = [ln for ln in text.splitlines() if not re.search(r"mqnic_app_block\.v\s*$", ln)]
    text = "\n".join(lines) + "\n"
    anchor = re.search(r"^VERILOG_SOURCES \+= .*$", text, flags=re.M)
    if anchor is None:
        raise ValueError(f"{path}: no VERILOG_SOURCES line")
    add = "".join(f"VERILOG_SOURCES += {s}\n" for s in app_sources)
    text = text[:anchor.start()] + add + text[anchor.start():]
    text = _set_make_param(text, "APP_ID", f"$(shell echo $$((0x{APP_ID:08x})) )", path)
    text = _set_make_param(text, "APP_ENABLE", "1", path)
    new, n = re.subn(r"^(MODULE\s*=).*$", rf"\g<1> {','.join(modules)}", text, flags=re.M)
    if n != 1:
        raise ValueError(f"{path}: no MODULE line")
    return new


def _vivado_makefile(text, path):
    anchor = re.search(r"^SYN_FILES \+= rtl/common/", text, flags=re.M)
    if anchor is None:
        raise ValueError(f"{path}: no SYN_FILES line for rtl/common")
    add = "".join(f"SYN_FILES += {s}\n" for s in _app_files(f"app/{APP}/rtl"))
    return text[:anchor.start()] + add + text[anchor.start():]


def _app_config(text, path):
    """A board build folder's config.tcl with this app enabled."""
    from inceptionn.hw.corundum.shell import APP_ID
    text = _set_tcl_param(text, "APP_ID", f"32'h{APP_ID:08x}", path)
    return _set_tcl_param(text, "APP_ENABLE", "1", path)


def _if_count(makefile):
    """The interface count a Corundum testbench Makefile sets (1 where it sets none)."""
    m = re.search(r"^export PARAM_IF_COUNT := (\d+)", makefile, re.M)
    return int(m.group(1)) if m else 1


def plan(tree, board):
    """{relative path: text or ("link", target)}: everything the install writes."""
    from inceptionn.hw.corundum import corundum_tests
    tree = check_tree(tree, board)
    files = {}
    app = Path("fpga/app") / APP
    files[app / "rtl/common"] = ("link", "../../../common/rtl/")
    files[app / "lib"] = ("link", "../../lib/")
    files[app / "README.md"] = corundum_tests.APP_README

    tb = app / "tb/mqnic_core_pcie_us"
    src = tree / _TEMPLATE / "tb/mqnic_core_pcie_us"
    files[tb / "Makefile"] = _tb_makefile(
        (src / "Makefile").read_text(), src / "Makefile", _app_files("../../rtl"),
        ["test_mqnic_core_pcie_us", "test_inceptionn_app"])
    for name in ("test_mqnic_core_pcie_us.py", "mqnic.py"):
        files[tb / name] = (src / name).read_text()
    files[tb / "inceptionn_suite.py"] = corundum_tests.suite(
        _if_count(files[tb / "Makefile"]), WIDTHS[-1])
    files[tb / "test_inceptionn_app.py"] = corundum_tests.app_tests()

    bdir = board_dir(board)
    build = bdir / f"fpga_app_{APP}"
    files[build / "Makefile"] = _vivado_makefile((tree / bdir / "fpga/Makefile").read_text(),
                                                 bdir / "fpga/Makefile")
    files[build / "config.tcl"] = _app_config((tree / bdir / "fpga/config.tcl").read_text(),
                                              bdir / "fpga/config.tcl")

    # The VC709 board folder, from the SUME's (the same FPGA; hw/corundum/vc709_board.py).
    from inceptionn.hw.corundum import vc709_board
    sume = board_dir("NetFPGA_SUME")
    files.update(vc709_board.board_files(tree, sume, _vivado_makefile, _app_config))

    stb = bdir / f"tb/fpga_core_{APP}"
    ssrc = tree / bdir / "tb/fpga_core"
    files[stb / "Makefile"] = _tb_makefile(
        (ssrc / "Makefile").read_text(), ssrc / "Makefile",
        _app_files(f"../../app/{APP}/rtl"), ["test_fpga_core", "test_inceptionn_sume"])
    for name in ("test_fpga_core.py", "mqnic.py"):
        if (ssrc / name).is_file():
            files[stb / name] = (ssrc / name).read_text()
    files[stb / "inceptionn_suite.py"] = corundum_tests.suite(_if_count(files[stb / "Makefile"]), 64)
    files[stb / "test_inceptionn_sume.py"] = corundum_tests.sume_tests()
    files[stb / "inceptionn_rates.py"] = corundum_tests.rates_common()
    files[stb / "test_inceptionn_rates.py"] = corundum_tests.rates_bench()
    files.update(_alveo_files(tree))
    # The Verilog last: every check of the user's files first, in seconds (the conversion
    # of the cores takes a minute on a loaded machine).
    for name, text in _sources().items():
        files[app / "rtl" / name] = text
    return files


def _alveo_files(tree):
    """The 100G designs' build folders and core testbenches with the app (512 bits): the
    Alveo design (U280, U250) and the VCU118's."""
    from inceptionn.hw.corundum import corundum_tests
    files = {}
    for design, builds in DESIGNS_100G.items():
        for theirs, ours in builds.items():
            src, build = design / theirs, design / ours
            files[build / "Makefile"] = _vivado_makefile((tree / src / "Makefile").read_text(),
                                                         src / "Makefile")
            files[build / "config.tcl"] = _app_config((tree / src / "config.tcl").read_text(),
                                                      src / "config.tcl")
        tb, src = design / f"tb/fpga_core_{APP}", tree / design / "tb/fpga_core"
        files[tb / "Makefile"] = _tb_makefile(
            (src / "Makefile").read_text(), src / "Makefile",
            _app_files(f"../../app/{APP}/rtl"), ["test_fpga_core", "test_inceptionn_100g"])
        for name in ("test_fpga_core.py", "test_fpga_core.v", "mqnic.py"):
            if (src / name).is_file():
                files[tb / name] = (src / name).read_text()
        files[tb / "inceptionn_suite.py"] = corundum_tests.suite(
            _if_count(files[tb / "Makefile"]), 512)
        files[tb / "test_inceptionn_100g.py"] = corundum_tests.tests_100g()
        files[tb / "inceptionn_rates.py"] = corundum_tests.rates_common()
        files[tb / "test_inceptionn_rates_100g.py"] = corundum_tests.rates_bench_100g()
    return files


def install(tree, board="NetFPGA_SUME"):
    """Write the app into the checkout at `tree`; returns the paths written."""
    files = plan(tree, board)          # every check and every text first: nothing half-written
    tree = Path(tree)
    for rel, content in files.items():
        dest = tree / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, tuple):
            if dest.is_symlink() or dest.exists():
                if dest.is_symlink() and os.readlink(dest) == content[1]:
                    continue
                dest.unlink()
            dest.symlink_to(content[1])
        else:
            dest.write_text(content)
    return sorted(files)
