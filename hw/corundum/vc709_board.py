"""A Corundum board folder for the VC709 (fpga/mqnic/VC709/fpga/), written by the install.

The VC709 carries the NetFPGA SUME's FPGA (XC7VX690T, speed grade -2 instead of -3),
four SFP+ cages on GTH transceivers with a Si5324 reference, and PCIe Gen3 x8 on the
same lanes. So the folder is the SUME's, read from the user's checkout and changed
where the boards differ (nothing of Corundum is kept in this project):

- ``fpga.xdc``: written here from the pin table (vc709_pins.py), not from the SUME's;
- ``rtl/fpga.v``: the SUME top with the VC709's differences: no separate user LEDs
  (the eight LEDs are the SFP ports' pairs), the Si5324 and I2C-switch resets active
  low (``si5324_rst_n``, ``i2c_mux_reset``), the VC709's board id;
- ``rtl/fpga_core.v`` and the other rtl, ``pcie.xdc``, ``ip/``: the SUME's unchanged;
- ``fpga/`` (Corundum alone) and ``fpga_app_<app>/`` (with the app): the SUME's Makefile
  and config.tcl for the -2 part and the VC709's board id.

``check_top(ports, pins)`` is the well-formedness check (every pin once, every port bit
constrained, no pin for a port the top lacks); ``top_ports`` reads a top's port list.
"""

import re

from .vc709_pins import BOARD_DEVICE_ID, PART, PINS, PORTS, SUME_PART

__all__ = ["BOARD", "xdc", "top_ports", "check_top", "fpga_v", "board_files",
           "vendor_stubs"]

BOARD = "VC709"
_SUME_DEVICE_ID = 0x7028


class BoardError(ValueError):
    """A SUME file in the checkout lacks a line the VC709 version changes."""


def _sub(text, pattern, repl, what, flags=re.M):
    new, n = re.subn(pattern, repl, text, flags=flags)
    if n != 1:
        raise BoardError(f"{what}: expected one match of {pattern!r}, found {n}")
    return new


def xdc(pins=PINS):
    """The board's fpga.xdc from the pin table."""
    out = ["# XDC constraints for the Xilinx VC709 (Corundum board top, INCEPTIONN install)",
           f"# part: {PART}; pins: hw/corundum/vc709_pins.py of the INCEPTIONN project (UG887)",
           "",
           "# General configuration",
           "set_property CFGBVS GND                           [current_design]",
           "set_property CONFIG_VOLTAGE 1.8                   [current_design]",
           "set_property BITSTREAM.GENERAL.COMPRESS true      [current_design]",
           "set_property BITSTREAM.CONFIG.UNUSEDPIN Pullup    [current_design]",
           ""]
    for p in pins:
        props = f"LOC {p.loc}" + (f" IOSTANDARD {p.iostandard}" if p.iostandard else "")
        props += f" {p.extra}" if p.extra else ""
        port = f"{{{p.port}}}" if "[" in p.port else p.port
        out.append(f"set_property -dict {{{props}}} [get_ports {port}] ;# {p.ref}")
    slow_in = [p.port for p in pins if p.iostandard and PORTS[_base(p.port)][0] == "input"]
    slow_out = [p.port for p in pins if p.iostandard and PORTS[_base(p.port)][0] != "input"]
    out += ["",
            "# Clocks: 200 MHz system, 100 MHz PCIe reference, 156.25 MHz SFP+ reference",
            "create_clock -period 5.000 -name clk_200mhz [get_ports clk_200mhz_p]",
            "create_clock -period 10.000 -name pcie_mgt_refclk [get_ports pcie_mgt_refclk_p]",
            "create_clock -period 6.400 -name sfp_mgt_refclk [get_ports sfp_mgt_refclk_p]",
            "",
            "# Slow board signals (buttons, LEDs, SFP+ control, I2C, resets): no timing",
            f"set_false_path -from [get_ports {{{' '.join(_unbit(slow_in))}}}]",
            f"set_input_delay 0 [get_ports {{{' '.join(_unbit(slow_in))}}}]",
            f"set_false_path -to [get_ports {{{' '.join(_unbit(slow_out))}}}]",
            f"set_output_delay 0 [get_ports {{{' '.join(_unbit(slow_out))}}}]",
            ""]
    return "\n".join(out)


def _base(port):
    return port.split("[", 1)[0]


def _unbit(ports):
    seen = []
    for p in ports:
        b = _base(p) + ("[*]" if "[" in p else "")
        if b not in seen:
            seen.append(b)
    return seen


_PORT_RE = re.compile(r"^\s*(input|output|inout)\s+wire\s*(?:\[(\d+):(\d+)\])?\s*(\w+)\s*,?\s*(?://.*)?$")


def top_ports(verilog, module="fpga"):
    """{port: (direction, width)} of `module`'s ANSI port list."""
    m = re.search(rf"^module\s+{module}\b(.*?)^\);", verilog, flags=re.M | re.S)
    if m is None:
        raise BoardError(f"no module {module} with an ANSI port list")
    header = m.group(1)
    body = header[header.rfind("\n)\n(") + 1:] if "\n)\n(" in header else header
    ports = {}
    for line in body.splitlines():
        pm = _PORT_RE.match(line)
        if pm:
            d, hi, lo, name = pm.groups()
            ports[name] = (d, int(hi) - int(lo) + 1 if hi else 1)
    return ports


def check_top(ports, pins=PINS):
    """Problems with a top's constraints: a pin used twice, a port bit without a pin, a
    pin for a port bit the top lacks. [] when well-formed."""
    problems = []
    locs = {}
    for p in pins:
        if p.loc in locs:
            problems.append(f"pin {p.loc} used by {locs[p.loc]} and {p.port}")
        locs[p.loc] = p.port
    want = {f"{n}[{i}]" if w > 1 else n for n, (_, w) in ports.items() for i in range(w)}
    have = [p.port for p in pins]
    dup = {x for x in have if have.count(x) > 1}
    problems += [f"port {x} constrained twice" for x in sorted(dup)]
    problems += [f"port {x} has no pin" for x in sorted(want - set(have))]
    problems += [f"pin {x} for no port of the top" for x in sorted(set(have) - want)]
    return problems


def fpga_v(sume):
    """The VC709 top from the SUME's rtl/fpga.v text."""
    v = _sub(sume, r"^\s*output\s+wire\s+\[1:0\]\s+led,\s*\n", "", "fpga.v: port led")
    v = _sub(v, r"^(\s*output\s+wire\s+)sfp_clk_rst,", r"\g<1>si5324_rst_n,",
             "fpga.v: port sfp_clk_rst")
    v = _sub(v, r"^assign sfp_clk_rst = rst_125mhz_int;",
             "// VC709: the Si5324's reset is active low.\n"
             "assign si5324_rst_n = !rst_125mhz_int;", "fpga.v: sfp_clk_rst")
    v = _sub(v, r"^assign i2c_mux_reset = rst_125mhz_int;",
             "// VC709: the I2C switch's reset is active low.\n"
             "assign i2c_mux_reset = !rst_125mhz_int;", "fpga.v: i2c_mux_reset")
    v = _sub(v, r"^(\s*parameter BOARD_ID = 32'h10ee_)7028,",
             rf"\g<1>{BOARD_DEVICE_ID:04x},", "fpga.v: BOARD_ID")
    # The core's two LEDs have no pins on the VC709: an internal wire after the ports.
    v = _sub(v, r"^(module fpga\b.*?^\);\n)",
             "\\g<1>\n// VC709: the eight user LEDs are the SFP ports'; the core's LEDs stay inside.\n"
             "wire [1:0] led;\n", "fpga.v: end of the port list", flags=re.M | re.S)
    return v


def _config_tcl(text, path):
    return _sub(text, r"^(set board_device_id \[expr 0x)7028\]",
                rf"\g<1>{BOARD_DEVICE_ID:04x}]", f"{path}: board_device_id")


def _makefile(text, path):
    return _sub(text, rf"^FPGA_PART = {SUME_PART}$", f"FPGA_PART = {PART}",
                f"{path}: FPGA_PART")


README = f"""# Corundum mqnic for the Xilinx VC709

Written by the INCEPTIONN project's install (`inceptionn corundum --tree <checkout>`)
from Corundum's NetFPGA SUME board folder: the same FPGA family member (XC7VX690T, here
{PART}), four SFP+ cages (10GBASE-R, GTH quad 113, Si5324 reference) and PCIe Gen3 x8.

- fpga.xdc: the VC709's pins (INCEPTIONN's hw/corundum/vc709_pins.py, from UG887).
- rtl/fpga.v: the SUME top with the VC709's differences (LEDs, active-low Si5324 and
  I2C switch resets, board id 0x10ee:0x{BOARD_DEVICE_ID:04x}); rtl/fpga_core.v is the SUME's.
- fpga/: Corundum alone; fpga_app_inceptionn/: with INCEPTIONN as the application block.
  `make` in either builds a bitstream with Vivado.

Not built or run on a board by the INCEPTIONN project (no Vivado there): the Si5324
start-up sequence is the SUME's (the I2C switch at 0x74, channel 4), to be checked
against the VC709 before relying on the SFP+ links.
"""


def board_files(tree, sume_dir, app_makefile, app_config):
    """{path relative to the checkout: text or ("link", target)} of the VC709 folder.

    ``sume_dir``: the SUME board folder (relative); ``app_makefile(text, path)`` and
    ``app_config(text, path)`` turn a board build folder's Makefile and config.tcl into
    the app's."""
    src = tree / sume_dir
    out_dir = sume_dir.parent.parent / BOARD / "fpga"
    files = {}
    files[out_dir / "README.md"] = README
    files[out_dir / "Makefile"] = (src / "Makefile").read_text()
    files[out_dir / "fpga.xdc"] = xdc()
    files[out_dir / "pcie.xdc"] = (src / "pcie.xdc").read_text()
    for ip in sorted((src / "ip").glob("*.tcl")):
        files[out_dir / "ip" / ip.name] = ip.read_text()
    files[out_dir / "common/vivado.mk"] = (src / "common/vivado.mk").read_text()
    for link in ("app", "lib"):
        files[out_dir / link] = ("link", "../../../" + link + "/")
    files[out_dir / "rtl/common"] = ("link", "../../../../common/rtl/")
    for v in sorted((src / "rtl").glob("*.v")):
        text = v.read_text()
        files[out_dir / "rtl" / v.name] = fpga_v(text) if v.name == "fpga.v" else text
    problems = check_top(top_ports(files[out_dir / "rtl/fpga.v"]))
    if problems:
        raise BoardError(f"{src / 'rtl/fpga.v'}: the VC709 top and its pins disagree: "
                         f"{problems[0]}")
    mk = _makefile((src / "fpga/Makefile").read_text(), sume_dir / "fpga/Makefile")
    cfg = _config_tcl((src / "fpga/config.tcl").read_text(), sume_dir / "fpga/config.tcl")
    files[out_dir / "fpga/Makefile"] = mk
    files[out_dir / "fpga/config.tcl"] = cfg
    files[out_dir / "fpga_app_inceptionn/Makefile"] = app_makefile(mk, out_dir / "fpga/Makefile")
    files[out_dir / "fpga_app_inceptionn/config.tcl"] = app_config(cfg, out_dir / "fpga/config.tcl")
    return files


_INST_RE = re.compile(r"^([A-Za-z_]\w*)\s*(#\s*\()?", re.M)


def _balanced(text, start):
    """Index just past the parenthesis group opening at text[start] == '('."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    raise BoardError("unbalanced parentheses")


def vendor_stubs(verilog, defined):
    """Empty modules for what `verilog` instantiates and no source defines (the Xilinx
    primitives and IP cores of a board top), so that a simulator can elaborate the top:
    every named port an input wide enough for any connection, every parameter there."""
    mods = {}
    keywords = {"module", "wire", "reg", "assign", "always", "parameter", "localparam",
                "input", "output", "inout", "generate", "endgenerate", "end", "begin",
                "if", "else", "for", "initial", "integer", "genvar", "endmodule", "function",
                "endfunction", "case", "endcase", "default", "task", "endtask"}
    for m in _INST_RE.finditer(verilog):
        name = m.group(1)
        if name in keywords or name in defined or name.startswith("`"):
            continue
        pos = m.end()
        params = set()
        if m.group(2):
            end = _balanced(verilog, pos - 1)
            params = set(re.findall(r"\.(\w+)\s*\(", verilog[pos:end]))
            pos = end
        im = re.compile(r"\s*([A-Za-z_]\w*)\s*\(").match(verilog, pos)
        if im is None:
            continue
        end = _balanced(verilog, im.end() - 1)
        ports = set(re.findall(r"\.(\w+)\s*\(", verilog[im.end():end]))
        p, q = mods.setdefault(name, (set(), set()))
        p |= params
        q |= ports
    out = []
    for name, (params, ports) in sorted(mods.items()):
        plist = ", ".join(sorted(ports))
        out.append(f"module {name} #(" + ", ".join(f"parameter {x} = 0" for x in sorted(params))
                   + f") ({plist});" if params else f"module {name} ({plist});")
        out += [f"    input wire [1023:0] {x};" for x in sorted(ports)]
        out.append("endmodule\n")
    return "\n".join(out)
