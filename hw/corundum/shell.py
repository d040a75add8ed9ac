"""The Verilog ``mqnic_app_block`` around the app's cores.

Corundum's core instantiates ``mqnic_app_block`` by name with its parameters; this
module writes one with that interface (shell_ports.py) which:

- instantiates one core (``inceptionn_app_w<W>``, app.py) per interface on the
  interface-level streams, the side-band fields zero-padded to the core's widths and
  cut back on the way out;
- hands every core the same AXI-Lite inputs and ORs their outputs (each core answers
  only its own window; regs.py);
- passes the direct and sync streams and all TX completions straight through and ties
  off DMA, DDR, HBM, statistics and GPIO, as Corundum's template app does;
- checks the parameters it cannot follow (stream width, side-band widths) at
  elaboration and stops with a message.
"""

import dataclasses

from .app import AppConfig
from .regmap import ADDR_BITS, APP_MAGIC, MAX_IF_COUNT
from .shell_ports import PARAMETERS, ports

__all__ = ["shell_verilog", "APP_ID"]

APP_ID = APP_MAGIC      # Corundum's APP_ID for this app (config.tcl), the registers' id word

_PASS = ("direct_tx", "direct_rx", "sync_tx", "sync_rx")
_PASS_CPL = ("direct", "sync", "if")
_STREAM_FIELDS = ("tdata", "tkeep", "tvalid", "tlast", "tuser")


def _passthrough():
    out = []
    for s in _PASS:
        for f in _STREAM_FIELDS:
            out.append(f"assign m_axis_{s}_{f} = s_axis_{s}_{f};")
        out.append(f"assign s_axis_{s}_tready = m_axis_{s}_tready;")
    for c in _PASS_CPL:
        for f in ("ts", "tag", "valid"):
            out.append(f"assign m_axis_{c}_tx_cpl_{f} = s_axis_{c}_tx_cpl_{f};")
        out.append(f"assign s_axis_{c}_tx_cpl_ready = m_axis_{c}_tx_cpl_ready;")
    return out


def _tieoffs():
    out = []
    for group, direction, width, name in ports():
        if direction != "output":
            continue
        if group.startswith(("Ethernet", "AXI-Lite slave")) or name == "jtag_tdo":
            continue
        if name.endswith(("_bready", "_rready")) and name.startswith("m_axil_ctrl"):
            out.append(f"assign {name} = 1'b1;")
        elif name.endswith("dma_ram_wr_cmd_ready"):
            out.append(f"assign {name} = {{RAM_SEG_COUNT{{1'b1}}}};")
        elif name.endswith("dma_ram_wr_done"):
            out.append(f"assign {name} = {name.replace('_done', '_cmd_valid')};")
        elif name.endswith("dma_ram_rd_cmd_ready"):
            out.append(f"assign {name} = {name.replace('_cmd_ready', '_resp_ready')};")
        elif name.endswith("dma_ram_rd_resp_valid"):
            out.append(f"assign {name} = {name.replace('_resp_valid', '_cmd_valid')};")
        else:
            out.append(f"assign {name} = 0;")
    out.append("assign jtag_tdo = jtag_tdi;")
    return out


def _core(cfgs):
    c = cfgs[0]
    lines = [f"""// The app's registers: every core sees the same requests, one answers.
wire [IF_COUNT-1:0] core_awready, core_wready, core_bvalid, core_arready, core_rvalid;
wire [IF_COUNT*32-1:0] core_rdata;
reg  [31:0] core_rdata_or;
integer k;
always @* begin
    core_rdata_or = 32'd0;
    for (k = 0; k < IF_COUNT; k = k + 1)
        core_rdata_or = core_rdata_or | core_rdata[k*32 +: 32];
end
assign s_axil_app_ctrl_awready = |core_awready;
assign s_axil_app_ctrl_wready = |core_wready;
assign s_axil_app_ctrl_bresp = 2'b00;
assign s_axil_app_ctrl_bvalid = |core_bvalid;
assign s_axil_app_ctrl_arready = |core_arready;
assign s_axil_app_ctrl_rdata = core_rdata_or;
assign s_axil_app_ctrl_rresp = 2'b00;
assign s_axil_app_ctrl_rvalid = |core_rvalid;

wire [{MAX_IF_COUNT.bit_length() - 1}:0] if_count = IF_COUNT;

genvar n;
generate
for (n = 0; n < IF_COUNT; n = n + 1) begin : iface
    wire [{(MAX_IF_COUNT - 1).bit_length() - 1}:0] if_index = n;
"""]
    for d in ("tx", "rx"):
        D = d.upper()
        for f, w in (("tid", c.__getattribute__(f"{d}_id_bits")),
                     ("tdest", c.__getattribute__(f"{d}_dest_bits")),
                     ("tuser", c.__getattribute__(f"{d}_user_bits"))):
            p = {"tid": f"AXIS_IF_{D}_ID_WIDTH", "tdest": f"AXIS_IF_{D}_DEST_WIDTH",
                 "tuser": f"AXIS_IF_{D}_USER_WIDTH"}[f]
            lines.append(f"    wire [{w - 1}:0] {d}_{f}_in = s_axis_if_{d}_{f}[n*{p} +: {p}];\n"
                         f"    wire [{w - 1}:0] {d}_{f}_out;\n"
                         f"    assign m_axis_if_{d}_{f}[n*{p} +: {p}] = {d}_{f}_out[{p}-1:0];\n")
    conns = [".clk(clk)", ".rst(rst)", ".if_index(if_index)", ".if_count(if_count)"]
    for name in ("awaddr", "araddr"):
        conns.append(f".s_axil_app_ctrl_{name}(s_axil_app_ctrl_{name}[{ADDR_BITS - 1}:0])")
    for name in ("awprot", "awvalid", "wdata", "wstrb", "wvalid", "bready", "arprot",
                 "arvalid", "rready"):
        conns.append(f".s_axil_app_ctrl_{name}(s_axil_app_ctrl_{name})")
    for name in ("awready", "wready", "bvalid", "arready", "rvalid"):
        conns.append(f".s_axil_app_ctrl_{name}(core_{name}[n])")
    conns += [".s_axil_app_ctrl_rdata(core_rdata[n*32 +: 32])", ".s_axil_app_ctrl_bresp()",
              ".s_axil_app_ctrl_rresp()"]
    for d in ("tx", "rx"):
        for side, io in (("s", "in"), ("m", "out")):
            p = f"{side}_axis_if_{d}"
            conns += [f".{p}_tdata({p}_tdata[n*AXIS_IF_DATA_WIDTH +: AXIS_IF_DATA_WIDTH])",
                      f".{p}_tkeep({p}_tkeep[n*AXIS_IF_KEEP_WIDTH +: AXIS_IF_KEEP_WIDTH])",
                      f".{p}_tvalid({p}_tvalid[n])", f".{p}_tready({p}_tready[n])",
                      f".{p}_tlast({p}_tlast[n])"]
            conns += [f".{p}_{f}({d}_{f}_{io})" for f in ("tid", "tdest", "tuser")]
    body = ",\n            ".join(conns)
    for j, cfg in enumerate(cfgs):
        cond = "if" if j == 0 else "end else if"
        lines.append(f"    {cond} (AXIS_IF_DATA_WIDTH == {cfg.nic_bits}) begin : w{cfg.nic_bits}\n"
                     f"        {cfg.module_name} core (\n            {body}\n        );\n")
    lines.append("    end\nend\nendgenerate\n")
    return "".join(lines)


def _checks(cfgs):
    cfg = cfgs[0]
    widths = [c.nic_bits for c in cfgs]
    conds = [
        (" && ".join(f"AXIS_IF_DATA_WIDTH != {w}" for w in widths),
         f"interface streams of {' or '.join(map(str, widths))} bits"),
        (f"IF_COUNT < 1 || IF_COUNT > {MAX_IF_COUNT}", f"1..{MAX_IF_COUNT} interfaces"),
        ("AXIL_APP_CTRL_DATA_WIDTH != 32", "32-bit application control registers"),
        (f"AXIL_APP_CTRL_ADDR_WIDTH < {ADDR_BITS}",
         f"an application control window of at least {1 << ADDR_BITS} bytes"),
    ]
    for d in ("tx", "rx"):
        for f, fld in (("ID", "id"), ("DEST", "dest"), ("USER", "user")):
            w = getattr(cfg, f"{d}_{fld}_bits")
            conds.append((f"AXIS_IF_{d.upper()}_{f}_WIDTH > {w}",
                          f"AXIS_IF_{d.upper()}_{f}_WIDTH of at most {w}"))
    out = ["// check configuration", "initial begin"]
    for cond, what in conds:
        out += [f"    if ({cond}) begin",
                f'        $error("Error: INCEPTIONN app needs {what} (instance %m)");',
                "        $finish;", "    end"]
    out.append("end")
    return "\n".join(out)


def shell_verilog(cfgs=(AppConfig(),)):
    """``mqnic_app_block`` for the cores generated with `cfgs` (AppConfig, one per stream
    width; the shell picks the one for AXIS_IF_DATA_WIDTH, and only it is elaborated)."""
    cfgs = list(cfgs)
    if len({dataclasses.replace(c, nic_bits=64) for c in cfgs}) != 1 or \
            len({c.nic_bits for c in cfgs}) != len(cfgs):
        raise ValueError("the cores must differ in their stream width only")
    params = ",\n".join(f"    parameter {n} = {v}" for n, v in PARAMETERS
                        if n != "APP_ID")
    params = params.replace("    parameter APP_CTRL_ENABLE",
                            f"    parameter APP_ID = 32'h{APP_ID:08X},\n    parameter APP_CTRL_ENABLE")
    decl = []
    group = None
    for g, direction, width, name in ports():
        if g != group:
            decl.append(f"    /*\n     * {g}\n     */")
            group = g
        rng = f"[{width}-1:0]" if width else ""
        decl.append(f"    {direction:6} wire {rng:44} {name},")
    decl[-1] = decl[-1].rstrip(",")
    return "\n".join([
        "// Generated by `inceptionn corundum`: the INCEPTIONN gradient compression engines",
        "// as Corundum's application block. Do not edit; regenerate instead.",
        "// Language: Verilog 2001",
        "",
        "`resetall",
        "`timescale 1ns / 1ps",
        "`default_nettype none",
        "",
        "module mqnic_app_block #",
        "(",
        params,
        ")",
        "(",
        *decl,
        ");",
        "",
        _checks(cfgs),
        "",
        "/*\n * INCEPTIONN: one TX and one RX engine per interface, on the interface-level streams\n */",
        _core(cfgs),
        "/*\n * Passed through\n */",
        *_passthrough(),
        "",
        "/*\n * Tied off\n */",
        *_tieoffs(),
        "",
        "endmodule",
        "",
        "`resetall",
        "",
    ])
