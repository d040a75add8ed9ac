"""The app block's testbench model, kept apart from the testbench so that editing the
testbench does not rebuild the model (the runner keys a factory's conversion by its
module's source).

One Verilator model holds ``mqnic_app_block`` twice, at 64 bits (NetFPGA SUME's
parameters) and at 512 bits (the template app testbench's), each with its ports under
``w64_``/``w512_`` at the top (``AppPair``, ``app_pair``); ``app_w64`` holds the 64-bit
one alone (make test's model: the 512-bit core's Verilog alone doubled the model's
Verilator and C++ time, and the 512-bit datapath is make sim-stress's, as the engines'
512-bit lanes are). Both shells' cores instantiate the same
engine modules, converted once; Verilator does not inline a large module instanced more
than once, so the engines' C++ is generated and compiled once for both widths, and one
build and one simulation test both.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..hw.corundum.shell_ports import ports
from ..rtl.designs import engine_designs

__all__ = ["PARAMS", "WIDTHS", "ENGINES", "app_core_w64", "app_core_w512", "app_pair",
           "app_w64", "side_widths"]

# Corundum's parameters for each width: NetFPGA SUME's (10G, 64 bits) and the template
# app testbench's (100G, 512 bits); one interface each (cocotbext-axi drives whole buses).
PARAMS = {
    64: {"IF_COUNT": 1, "PORTS_PER_IF": 1, "AXIS_DATA_WIDTH": 64, "TX_TAG_WIDTH": 16,
         "PTP_TS_ENABLE": 1, "AXIS_IF_TX_ID_WIDTH": 9, "AXIS_IF_RX_DEST_WIDTH": 9,
         "AXIL_APP_CTRL_ADDR_WIDTH": 24},
    512: {"IF_COUNT": 1, "PORTS_PER_IF": 1, "AXIS_DATA_WIDTH": 512, "TX_TAG_WIDTH": 16,
          "PTP_TS_ENABLE": 1, "AXIS_IF_TX_ID_WIDTH": 13, "AXIS_IF_RX_DEST_WIDTH": 9,
          "AXIL_APP_CTRL_ADDR_WIDTH": 24},
}
WIDTHS = tuple(PARAMS)


def side_widths(width):
    """{(direction, field): bits} of the interface streams' side-band under PARAMS
    (the defaults of mqnic_app_block for one port per interface)."""
    p = PARAMS[width]
    return {("tx", "tid"): p["AXIS_IF_TX_ID_WIDTH"], ("tx", "tdest"): 4,
            ("tx", "tuser"): p["TX_TAG_WIDTH"] + 1,
            ("rx", "tid"): 1, ("rx", "tdest"): p["AXIS_IF_RX_DEST_WIDTH"],
            ("rx", "tuser"): 96 * p["PTP_TS_ENABLE"] + 1}


def _members(width):
    """The ports the testbench drives: the interface streams and the AXI-Lite control
    port, {name as in mqnic_app_block: member}."""
    out = {}
    for name, w, flow in (("awaddr", 24, In), ("awprot", 3, In), ("awvalid", 1, In),
                          ("awready", 1, Out), ("wdata", 32, In), ("wstrb", 4, In),
                          ("wvalid", 1, In), ("wready", 1, Out), ("bresp", 2, Out),
                          ("bvalid", 1, Out), ("bready", 1, In), ("araddr", 24, In),
                          ("arprot", 3, In), ("arvalid", 1, In), ("arready", 1, Out),
                          ("rdata", 32, Out), ("rresp", 2, Out), ("rvalid", 1, Out),
                          ("rready", 1, In)):
        out[f"s_axil_app_ctrl_{name}"] = flow(w)
    side = side_widths(width)
    for d in ("tx", "rx"):
        for prefix, flow, back in ((f"s_axis_if_{d}", In, Out), (f"m_axis_if_{d}", Out, In)):
            out.update({f"{prefix}_tdata": flow(width), f"{prefix}_tkeep": flow(width // 8),
                        f"{prefix}_tvalid": flow(1), f"{prefix}_tready": back(1),
                        f"{prefix}_tlast": flow(1)})
            for f in ("tid", "tdest", "tuser"):
                out[f"{prefix}_{f}"] = flow(side[(d, f)])
    return out


class AppPair(wiring.Component):
    """One ``mqnic_app_block`` instance per width in `widths` (default: every width in
    PARAMS), each with the ports of ``_members`` under ``w<width>_``; every other input
    tied to 0 (the DMA, DDR and direct streams the app passes through or ties off are
    not driven here)."""

    def __init__(self, widths=WIDTHS):
        self.widths = tuple(widths)
        super().__init__({f"w{w}_{name}": member for w in self.widths
                          for name, member in _members(w).items()})

    def elaborate(self, platform):
        m = Module()
        for w in self.widths:
            used = _members(w)
            conn = {f"p_{k}": v for k, v in PARAMS[w].items()}
            conn.update(i_clk=ClockSignal(), i_rst=ResetSignal())
            for name, member in used.items():
                conn[("i_" if member.flow == In else "o_") + name] = getattr(self, f"w{w}_{name}")
            for _group, direction, _width, name in ports():
                if direction == "input" and name not in used and name not in ("clk", "rst"):
                    conn[f"i_{name}"] = C(0, 1)
            m.submodules[f"app_w{w}"] = Instance("mqnic_app_block", **conn)
        return m


def app_core_w64():
    from ..hw.corundum.app import AppConfig, InceptionnApp
    return InceptionnApp(AppConfig(nic_bits=64))


def app_core_w512():
    from ..hw.corundum.app import AppConfig, InceptionnApp
    return InceptionnApp(AppConfig(nic_bits=512))


def app_pair():
    return AppPair()


def app_w64():
    return AppPair((64,))


# The engines' modules, (name, factory), which both widths' cores instantiate by name.
ENGINES = tuple(engine_designs())
# The modules the pair instantiates by name, each converted once: the two widths' cores
# (the shell, written by the pytest entry, instantiates them) and the engines they hold.
app_pair.instances = (("inceptionn_app_w64", app_core_w64),
                      ("inceptionn_app_w512", app_core_w512), *ENGINES)
app_w64.instances = (("inceptionn_app_w64", app_core_w64), *ENGINES)
