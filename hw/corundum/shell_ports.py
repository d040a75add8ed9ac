"""Corundum's ``mqnic_app_block`` interface: its parameters and ports, as data.

The names, order and widths are those of Corundum's documented module interface
(docs/source/modules/mqnic_app_block.rst in Corundum), which ``mqnic_core``
instantiates by name; shell.py writes the module from these tables.
"""

__all__ = ["PARAMETERS", "PORT_GROUPS", "ports"]

# (name, default), in Corundum's order.
PARAMETERS = [
    ("IF_COUNT", "1"), ("PORTS_PER_IF", "1"), ("SCHED_PER_IF", "PORTS_PER_IF"),
    ("PORT_COUNT", "IF_COUNT*PORTS_PER_IF"),
    ("CLK_PERIOD_NS_NUM", "4"), ("CLK_PERIOD_NS_DENOM", "1"),
    ("PTP_CLK_PERIOD_NS_NUM", "4"), ("PTP_CLK_PERIOD_NS_DENOM", "1"),
    ("PTP_TS_WIDTH", "96"), ("PTP_PORT_CDC_PIPELINE", "0"), ("PTP_PEROUT_ENABLE", "0"),
    ("PTP_PEROUT_COUNT", "1"),
    ("PTP_TS_ENABLE", "1"), ("TX_TAG_WIDTH", "16"), ("MAX_TX_SIZE", "9214"),
    ("MAX_RX_SIZE", "9214"),
    ("DDR_CH", "1"), ("DDR_ENABLE", "0"), ("DDR_GROUP_SIZE", "1"),
    ("AXI_DDR_DATA_WIDTH", "256"), ("AXI_DDR_ADDR_WIDTH", "32"),
    ("AXI_DDR_STRB_WIDTH", "(AXI_DDR_DATA_WIDTH/8)"), ("AXI_DDR_ID_WIDTH", "8"),
    ("AXI_DDR_AWUSER_ENABLE", "0"), ("AXI_DDR_AWUSER_WIDTH", "1"),
    ("AXI_DDR_WUSER_ENABLE", "0"), ("AXI_DDR_WUSER_WIDTH", "1"),
    ("AXI_DDR_BUSER_ENABLE", "0"), ("AXI_DDR_BUSER_WIDTH", "1"),
    ("AXI_DDR_ARUSER_ENABLE", "0"), ("AXI_DDR_ARUSER_WIDTH", "1"),
    ("AXI_DDR_RUSER_ENABLE", "0"), ("AXI_DDR_RUSER_WIDTH", "1"),
    ("AXI_DDR_MAX_BURST_LEN", "256"), ("AXI_DDR_NARROW_BURST", "0"),
    ("AXI_DDR_FIXED_BURST", "0"), ("AXI_DDR_WRAP_BURST", "0"),
    ("HBM_CH", "1"), ("HBM_ENABLE", "0"), ("HBM_GROUP_SIZE", "1"),
    ("AXI_HBM_DATA_WIDTH", "256"), ("AXI_HBM_ADDR_WIDTH", "32"),
    ("AXI_HBM_STRB_WIDTH", "(AXI_HBM_DATA_WIDTH/8)"), ("AXI_HBM_ID_WIDTH", "8"),
    ("AXI_HBM_AWUSER_ENABLE", "0"), ("AXI_HBM_AWUSER_WIDTH", "1"),
    ("AXI_HBM_WUSER_ENABLE", "0"), ("AXI_HBM_WUSER_WIDTH", "1"),
    ("AXI_HBM_BUSER_ENABLE", "0"), ("AXI_HBM_BUSER_WIDTH", "1"),
    ("AXI_HBM_ARUSER_ENABLE", "0"), ("AXI_HBM_ARUSER_WIDTH", "1"),
    ("AXI_HBM_RUSER_ENABLE", "0"), ("AXI_HBM_RUSER_WIDTH", "1"),
    ("AXI_HBM_MAX_BURST_LEN", "256"), ("AXI_HBM_NARROW_BURST", "0"),
    ("AXI_HBM_FIXED_BURST", "0"), ("AXI_HBM_WRAP_BURST", "0"),
    ("APP_ID", "32'h494E4350"), ("APP_CTRL_ENABLE", "1"), ("APP_DMA_ENABLE", "1"),
    ("APP_AXIS_DIRECT_ENABLE", "1"), ("APP_AXIS_SYNC_ENABLE", "1"),
    ("APP_AXIS_IF_ENABLE", "1"), ("APP_STAT_ENABLE", "1"),
    ("APP_GPIO_IN_WIDTH", "32"), ("APP_GPIO_OUT_WIDTH", "32"),
    ("DMA_ADDR_WIDTH", "64"), ("DMA_IMM_ENABLE", "0"), ("DMA_IMM_WIDTH", "32"),
    ("DMA_LEN_WIDTH", "16"), ("DMA_TAG_WIDTH", "16"), ("RAM_SEL_WIDTH", "4"),
    ("RAM_ADDR_WIDTH", "16"), ("RAM_SEG_COUNT", "2"),
    ("RAM_SEG_DATA_WIDTH", "256*2/RAM_SEG_COUNT"), ("RAM_SEG_BE_WIDTH", "RAM_SEG_DATA_WIDTH/8"),
    ("RAM_SEG_ADDR_WIDTH", "RAM_ADDR_WIDTH-$clog2(RAM_SEG_COUNT*RAM_SEG_BE_WIDTH)"),
    ("RAM_PIPELINE", "2"),
    ("AXIL_APP_CTRL_DATA_WIDTH", "32"), ("AXIL_APP_CTRL_ADDR_WIDTH", "16"),
    ("AXIL_APP_CTRL_STRB_WIDTH", "(AXIL_APP_CTRL_DATA_WIDTH/8)"),
    ("AXIL_CTRL_DATA_WIDTH", "32"), ("AXIL_CTRL_ADDR_WIDTH", "16"),
    ("AXIL_CTRL_STRB_WIDTH", "(AXIL_CTRL_DATA_WIDTH/8)"),
    ("AXIS_DATA_WIDTH", "512"), ("AXIS_KEEP_WIDTH", "AXIS_DATA_WIDTH/8"),
    ("AXIS_TX_USER_WIDTH", "TX_TAG_WIDTH + 1"),
    ("AXIS_RX_USER_WIDTH", "(PTP_TS_ENABLE ? PTP_TS_WIDTH : 0) + 1"),
    ("AXIS_RX_USE_READY", "0"),
    ("AXIS_SYNC_DATA_WIDTH", "AXIS_DATA_WIDTH"),
    ("AXIS_SYNC_KEEP_WIDTH", "AXIS_SYNC_DATA_WIDTH/8"),
    ("AXIS_SYNC_TX_USER_WIDTH", "AXIS_TX_USER_WIDTH"),
    ("AXIS_SYNC_RX_USER_WIDTH", "AXIS_RX_USER_WIDTH"),
    ("AXIS_IF_DATA_WIDTH", "AXIS_SYNC_DATA_WIDTH*2**$clog2(PORTS_PER_IF)"),
    ("AXIS_IF_KEEP_WIDTH", "AXIS_IF_DATA_WIDTH/8"), ("AXIS_IF_TX_ID_WIDTH", "12"),
    ("AXIS_IF_RX_ID_WIDTH", "PORTS_PER_IF > 1 ? $clog2(PORTS_PER_IF) : 1"),
    ("AXIS_IF_TX_DEST_WIDTH", "$clog2(PORTS_PER_IF)+4"), ("AXIS_IF_RX_DEST_WIDTH", "8"),
    ("AXIS_IF_TX_USER_WIDTH", "AXIS_SYNC_TX_USER_WIDTH"),
    ("AXIS_IF_RX_USER_WIDTH", "AXIS_SYNC_RX_USER_WIDTH"),
    ("STAT_ENABLE", "1"), ("STAT_INC_WIDTH", "24"), ("STAT_ID_WIDTH", "12"),
]

# Per group: lines "i|o <width> <name>" (width a Verilog expression, - for one bit).
_AXIL = """i ADDR awaddr|i 3 awprot|i - awvalid|o - awready|i DATA wdata|i STRB wstrb|i - wvalid
|o - wready|o 2 bresp|o - bvalid|i - bready|i ADDR araddr|i 3 arprot|i - arvalid|o - arready
|o DATA rdata|o 2 rresp|o - rvalid|i - rready"""


def _axil(prefix, slave, w):
    out = []
    for item in _AXIL.replace("\n", "").split("|"):
        d, width, name = item.split()
        width = {"ADDR": f"{w}_ADDR_WIDTH", "DATA": f"{w}_DATA_WIDTH",
                 "STRB": f"{w}_STRB_WIDTH"}.get(width, width)
        if not slave:
            d = "o" if d == "i" else "i"
        out.append(f"{d} {width} {prefix}_{name}")
    return out


def _desc(prefix, write):
    p = f"m_axis_{prefix}_dma_{'write' if write else 'read'}_desc"
    s = f"s_axis_{prefix}_dma_{'write' if write else 'read'}_desc_status"
    lines = [f"o DMA_ADDR_WIDTH {p}_dma_addr", f"o RAM_SEL_WIDTH {p}_ram_sel",
             f"o RAM_ADDR_WIDTH {p}_ram_addr"]
    if write:
        lines += [f"o DMA_IMM_WIDTH {p}_imm", f"o - {p}_imm_en"]
    lines += [f"o DMA_LEN_WIDTH {p}_len", f"o DMA_TAG_WIDTH {p}_tag", f"o - {p}_valid",
              f"i - {p}_ready", f"i DMA_TAG_WIDTH {s}_tag", f"i 4 {s}_error", f"i - {s}_valid"]
    return lines


def _dma_ram(prefix):
    n = "RAM_SEG_COUNT"
    return [f"i {n}*RAM_SEL_WIDTH {prefix}_dma_ram_wr_cmd_sel",
            f"i {n}*RAM_SEG_BE_WIDTH {prefix}_dma_ram_wr_cmd_be",
            f"i {n}*RAM_SEG_ADDR_WIDTH {prefix}_dma_ram_wr_cmd_addr",
            f"i {n}*RAM_SEG_DATA_WIDTH {prefix}_dma_ram_wr_cmd_data",
            f"i {n} {prefix}_dma_ram_wr_cmd_valid", f"o {n} {prefix}_dma_ram_wr_cmd_ready",
            f"o {n} {prefix}_dma_ram_wr_done",
            f"i {n}*RAM_SEL_WIDTH {prefix}_dma_ram_rd_cmd_sel",
            f"i {n}*RAM_SEG_ADDR_WIDTH {prefix}_dma_ram_rd_cmd_addr",
            f"i {n} {prefix}_dma_ram_rd_cmd_valid", f"o {n} {prefix}_dma_ram_rd_cmd_ready",
            f"o {n}*RAM_SEG_DATA_WIDTH {prefix}_dma_ram_rd_resp_data",
            f"o {n} {prefix}_dma_ram_rd_resp_valid", f"i {n} {prefix}_dma_ram_rd_resp_ready"]


def _axis(prefix, count, data, keep, user, extra=()):
    """A slave and a master stream: s_axis_<prefix>_* in, m_axis_<prefix>_* out."""
    out = []
    for side, d, b in (("s", "i", "o"), ("m", "o", "i")):
        p = f"{side}_axis_{prefix}"
        out += [f"{d} {count}*{data} {p}_tdata", f"{d} {count}*{keep} {p}_tkeep",
                f"{d} {count} {p}_tvalid", f"{b} {count} {p}_tready", f"{d} {count} {p}_tlast"]
        out += [f"{d} {count}*{w} {p}_t{f}" for f, w in extra]
        out.append(f"{d} {count}*{user} {p}_tuser")
    return out


def _cpl(prefix, count):
    out = []
    for side, d, b in (("s", "i", "o"), ("m", "o", "i")):
        p = f"{side}_axis_{prefix}_tx_cpl"
        out += [f"{d} {count}*PTP_TS_WIDTH {p}_ts", f"{d} {count}*TX_TAG_WIDTH {p}_tag",
                f"{d} {count} {p}_valid", f"{b} {count} {p}_ready"]
    return out


def _axi_master(prefix, ch, w):
    c = f"{ch}*"
    lines = [f"i {ch} {prefix}_clk", f"i {ch} {prefix}_rst"]
    m = f"m_axi_{prefix}"
    for a in ("aw", "ar"):
        lines += [f"o {c}{w}_ID_WIDTH {m}_{a}id", f"o {c}{w}_ADDR_WIDTH {m}_{a}addr",
                  f"o {c}8 {m}_{a}len", f"o {c}3 {m}_{a}size", f"o {c}2 {m}_{a}burst",
                  f"o {ch} {m}_{a}lock", f"o {c}4 {m}_{a}cache", f"o {c}3 {m}_{a}prot",
                  f"o {c}4 {m}_{a}qos", f"o {c}{w}_{a.upper()}USER_WIDTH {m}_{a}user",
                  f"o {ch} {m}_{a}valid", f"i {ch} {m}_{a}ready"]
        if a == "aw":
            lines += [f"o {c}{w}_DATA_WIDTH {m}_wdata", f"o {c}{w}_STRB_WIDTH {m}_wstrb",
                      f"o {ch} {m}_wlast", f"o {c}{w}_WUSER_WIDTH {m}_wuser",
                      f"o {ch} {m}_wvalid", f"i {ch} {m}_wready",
                      f"i {c}{w}_ID_WIDTH {m}_bid", f"i {c}2 {m}_bresp",
                      f"i {c}{w}_BUSER_WIDTH {m}_buser", f"i {ch} {m}_bvalid",
                      f"o {ch} {m}_bready"]
        else:
            lines += [f"i {c}{w}_ID_WIDTH {m}_rid", f"i {c}{w}_DATA_WIDTH {m}_rdata",
                      f"i {c}2 {m}_rresp", f"i {ch} {m}_rlast",
                      f"i {c}{w}_RUSER_WIDTH {m}_ruser", f"i {ch} {m}_rvalid",
                      f"o {ch} {m}_rready"]
    lines.append(f"i {ch} {prefix}_status")
    return lines


PORT_GROUPS = [
    ("Clock and reset", ["i - clk", "i - rst"]),
    ("AXI-Lite slave interface (control from host)", _axil("s_axil_app_ctrl", True, "AXIL_APP_CTRL")),
    ("AXI-Lite master interface (control to NIC)", _axil("m_axil_ctrl", False, "AXIL_CTRL")),
    ("DMA descriptors (control)", _desc("ctrl", False) + _desc("ctrl", True)),
    ("DMA descriptors (data)", _desc("data", False) + _desc("data", True)),
    ("DMA RAM interface (control)", _dma_ram("ctrl")),
    ("DMA RAM interface (data)", _dma_ram("data")),
    ("PTP clock", ["i - ptp_clk", "i - ptp_rst", "i - ptp_sample_clk", "i - ptp_td_sd",
                   "i - ptp_pps", "i - ptp_pps_str", "i - ptp_sync_locked",
                   "i PTP_TS_WIDTH ptp_sync_ts_rel", "i - ptp_sync_ts_rel_step",
                   "i PTP_TS_WIDTH ptp_sync_ts_tod", "i - ptp_sync_ts_tod_step",
                   "i - ptp_sync_pps", "i - ptp_sync_pps_str",
                   "i PTP_PEROUT_COUNT ptp_perout_locked", "i PTP_PEROUT_COUNT ptp_perout_error",
                   "i PTP_PEROUT_COUNT ptp_perout_pulse"]),
    ("Ethernet (direct MAC interface)",
     ["i PORT_COUNT direct_tx_clk", "i PORT_COUNT direct_tx_rst"]
     + _axis("direct_tx", "PORT_COUNT", "AXIS_DATA_WIDTH", "AXIS_KEEP_WIDTH", "AXIS_TX_USER_WIDTH")
     + _cpl("direct", "PORT_COUNT")
     + ["i PORT_COUNT direct_rx_clk", "i PORT_COUNT direct_rx_rst"]
     + _axis("direct_rx", "PORT_COUNT", "AXIS_DATA_WIDTH", "AXIS_KEEP_WIDTH", "AXIS_RX_USER_WIDTH")),
    ("Ethernet (synchronous MAC interface)",
     _axis("sync_tx", "PORT_COUNT", "AXIS_SYNC_DATA_WIDTH", "AXIS_SYNC_KEEP_WIDTH",
           "AXIS_SYNC_TX_USER_WIDTH")
     + _cpl("sync", "PORT_COUNT")
     + _axis("sync_rx", "PORT_COUNT", "AXIS_SYNC_DATA_WIDTH", "AXIS_SYNC_KEEP_WIDTH",
             "AXIS_SYNC_RX_USER_WIDTH")),
    ("Ethernet (internal at interface module)",
     _axis("if_tx", "IF_COUNT", "AXIS_IF_DATA_WIDTH", "AXIS_IF_KEEP_WIDTH", "AXIS_IF_TX_USER_WIDTH",
           (("id", "AXIS_IF_TX_ID_WIDTH"), ("dest", "AXIS_IF_TX_DEST_WIDTH")))
     + _cpl("if", "IF_COUNT")
     + _axis("if_rx", "IF_COUNT", "AXIS_IF_DATA_WIDTH", "AXIS_IF_KEEP_WIDTH", "AXIS_IF_RX_USER_WIDTH",
             (("id", "AXIS_IF_RX_ID_WIDTH"), ("dest", "AXIS_IF_RX_DEST_WIDTH")))),
    ("DDR", _axi_master("ddr", "DDR_CH", "AXI_DDR")),
    ("HBM", _axi_master("hbm", "HBM_CH", "AXI_HBM")),
    ("Statistics increment output", ["o STAT_INC_WIDTH m_axis_stat_tdata",
                                     "o STAT_ID_WIDTH m_axis_stat_tid",
                                     "o - m_axis_stat_tvalid", "i - m_axis_stat_tready"]),
    ("GPIO", ["i APP_GPIO_IN_WIDTH gpio_in", "o APP_GPIO_OUT_WIDTH gpio_out"]),
    ("JTAG", ["i - jtag_tdi", "o - jtag_tdo", "i - jtag_tms", "i - jtag_tck"]),
]


def ports():
    """[(group, direction "input"/"output", width expression or None, name)]"""
    out = []
    for group, lines in PORT_GROUPS:
        for line in lines:
            d, width, name = line.split()
            out.append((group, "input" if d == "i" else "output",
                        None if width == "-" else width, name))
    return out
