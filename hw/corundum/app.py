"""InceptionnApp: one interface's engines on the interface-level streams of Corundum's
application block, and their registers; the Verilog shell (shell.py) puts one per
interface inside ``mqnic_app_block``.

The TX engine between ``s_axis_if_tx`` (after Corundum's egress processing, TX checksum
offload) and ``m_axis_if_tx``; the RX engine between ``s_axis_if_rx`` and
``m_axis_if_rx`` (before ingress processing: RX checksum and hash). The ports keep
Corundum's names, so that the shell connects them by name. ``tuser`` bit 0 is the
bad-frame bit in both directions (the engines' ``user``); the other bits (the TX tag,
the RX timestamp) ride with tid and tdest as the frame's side-band (engine_path.py).
"""

from dataclasses import dataclass

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...rtl.blocks import engines
from .engine_path import EnginePath, engine_ports
from .regmap import ENGINES, MAX_IF_COUNT
from .regs import AxiLiteRegs, axil_members

__all__ = ["AppConfig", "InceptionnApp", "ENGINE_MODULES", "NIC_WIDTHS"]

# The engines' Verilog modules, as `make verilog` names them (the registry's names).
ENGINE_MODULES = {kind: row.name for kind, row in engines().items()}
NIC_WIDTHS = (64, 128, 256, 512)


@dataclass(frozen=True)
class AppConfig:
    """The stream width one core is generated for, and the widths of its side-band
    fields: at least Corundum's (the shell zero-pads narrower ones and checks)."""
    nic_bits: int = 64              # AXIS_IF_DATA_WIDTH
    tx_id_bits: int = 16            # >= AXIS_IF_TX_ID_WIDTH (TX_QUEUE_INDEX_WIDTH)
    tx_dest_bits: int = 8           # >= AXIS_IF_TX_DEST_WIDTH
    tx_user_bits: int = 33          # >= AXIS_IF_TX_USER_WIDTH (TX_TAG_WIDTH + 1)
    rx_id_bits: int = 8             # >= AXIS_IF_RX_ID_WIDTH
    rx_dest_bits: int = 16          # >= AXIS_IF_RX_DEST_WIDTH (RX_QUEUE_INDEX_WIDTH + 1)
    rx_user_bits: int = 97          # >= AXIS_IF_RX_USER_WIDTH (96-bit timestamp + 1)

    def __post_init__(self):
        if self.nic_bits not in NIC_WIDTHS:
            raise ValueError(f"stream width {self.nic_bits} not supported; "
                             f"one of {', '.join(map(str, NIC_WIDTHS))}")

    def side_bits(self, d):
        return (getattr(self, f"{d}_id_bits") + getattr(self, f"{d}_dest_bits")
                + getattr(self, f"{d}_user_bits") - 1)

    @property
    def module_name(self):
        return f"inceptionn_app_w{self.nic_bits}"


def _stream_members(cfg, d):
    w = cfg.nic_bits
    out = {}
    for prefix, flow in ((f"s_axis_if_{d}", In), (f"m_axis_if_{d}", Out)):
        back = Out if flow is In else In
        out.update({
            f"{prefix}_tdata": flow(w), f"{prefix}_tkeep": flow(w // 8),
            f"{prefix}_tvalid": flow(1), f"{prefix}_tready": back(1),
            f"{prefix}_tlast": flow(1),
            f"{prefix}_tid": flow(getattr(cfg, f"{d}_id_bits")),
            f"{prefix}_tdest": flow(getattr(cfg, f"{d}_dest_bits")),
            f"{prefix}_tuser": flow(getattr(cfg, f"{d}_user_bits")),
        })
    return out


class InceptionnApp(wiring.Component):
    """One interface: its TX and RX engine paths and its registers. ``if_index`` and
    ``if_count`` are constants from the shell (the register windows)."""

    def __init__(self, cfg):
        self.cfg = cfg
        super().__init__({**axil_members("s_axil_app_ctrl"),
                          "if_index": In(range(MAX_IF_COUNT)),
                          "if_count": In(range(MAX_IF_COUNT + 1)),
                          **_stream_members(cfg, "tx"), **_stream_members(cfg, "rx")})

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        ports = {(d, name): (member.shape, member.init if member.flow == In else 0)
                 for d, cls in ENGINES.items() for name, member in engine_ports(cls).items()}
        m.submodules.regs = regs = AxiLiteRegs(cfg.nic_bits, ports)
        m.d.comb += [regs.if_index.eq(self.if_index), regs.if_count.eq(self.if_count)]
        for name, member in axil_members("s_axil").items():
            ours = getattr(self, name.replace("s_axil", "s_axil_app_ctrl", 1))
            theirs = getattr(regs, name)
            m.d.comb += (theirs.eq(ours) if member.flow == In else ours.eq(theirs))

        for d, cls in ENGINES.items():
            path = EnginePath(d, cfg.nic_bits, cfg.side_bits(d))
            m.submodules[d] = path
            for name, member in engine_ports(cls).items():
                v = regs.values[(d, name)]
                if member.flow == In:
                    m.d.comb += getattr(path, name).eq(v)
                else:
                    m.d.comb += v.eq(getattr(path, name))
            self._connect(m, path, d)
        return m

    def _connect(self, m, path, d):
        cfg = self.cfg
        idb, deb = getattr(cfg, f"{d}_id_bits"), getattr(cfg, f"{d}_dest_bits")
        s = {f: getattr(self, f"s_axis_if_{d}_t{f}") for f in
             ("data", "keep", "valid", "ready", "last", "id", "dest", "user")}
        o = {f: getattr(self, f"m_axis_if_{d}_t{f}") for f in
             ("data", "keep", "valid", "ready", "last", "id", "dest", "user")}
        sp, mp = path.s.payload, path.m.payload
        m.d.comb += [
            sp.data.eq(s["data"]), sp.keep.eq(s["keep"]), sp.last.eq(s["last"]),
            sp.user.eq(s["user"][0]), sp.side.eq(Cat(s["id"], s["dest"], s["user"][1:])),
            path.s.valid.eq(s["valid"]), s["ready"].eq(path.s.ready),
            o["data"].eq(mp.data), o["keep"].eq(mp.keep), o["last"].eq(mp.last),
            o["id"].eq(mp.side[:idb]), o["dest"].eq(mp.side[idb:idb + deb]),
            o["user"].eq(Cat(mp.user, mp.side[idb + deb:])),
            o["valid"].eq(path.m.valid), path.m.ready.eq(o["ready"]),
        ]
