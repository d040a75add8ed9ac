"""256-bit AXI-stream beat layout and a register slice.

The engines move Ethernet frames as 32-byte beats: byte j of a frame is
``data[8*(j % 32) + 7 : 8*(j % 32)]`` of beat ``j // 32``; ``keep`` marks the valid
bytes of the last beat, ``user`` on the last beat marks a bad frame.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .wire import BEAT_BITS, BEAT_BYTES

__all__ = ["AxisBeat", "axis_signature"]

AxisBeat = data.StructLayout({
    "data": BEAT_BITS,
    "keep": BEAT_BYTES,
    "last": 1,
    "user": 1,
})


def axis_signature():
    return stream.Signature(AxisBeat)


def _axis_members(prefix, flow):
    # flow is In for a slave (s_axis) port, Out for a master (m_axis) port.
    back = Out if flow is In else In
    return {
        f"{prefix}_tdata": flow(BEAT_BITS),
        f"{prefix}_tkeep": flow(BEAT_BYTES),
        f"{prefix}_tlast": flow(1),
        f"{prefix}_tuser": flow(1),
        f"{prefix}_tvalid": flow(1),
        f"{prefix}_tready": back(1),
    }


class AxisTop(wiring.Component):
    """Wraps a core whose ``i``/``o`` members are AXI streams, under AXI port names.

    The Verilog module then has ``s_axis_tdata[255:0]``, ``s_axis_tkeep[31:0]``,
    ``s_axis_tlast``, ``s_axis_tuser``, ``s_axis_tvalid``, ``s_axis_tready`` and the
    same ``m_axis_*`` set, which is what a NIC's AXI-stream fabric (and
    cocotbext-axi's bus discovery) expects. Every other port of the core (configuration,
    counters) is passed through under its own name.
    """

    def __init__(self, core):
        self.core = core
        members = {**_axis_members("s_axis", In), **_axis_members("m_axis", Out)}
        self._passthrough = []
        for name, member in core.signature.members.items():
            if name in ("i", "o"):
                continue
            if not member.is_port:
                raise TypeError(f"AxisTop can only pass plain ports through, not {name!r}")
            members[name] = member
            self._passthrough.append((name, member.flow))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        m.d.comb += [
            core.i.payload.data.eq(self.s_axis_tdata),
            core.i.payload.keep.eq(self.s_axis_tkeep),
            core.i.payload.last.eq(self.s_axis_tlast),
            core.i.payload.user.eq(self.s_axis_tuser),
            core.i.valid.eq(self.s_axis_tvalid),
            self.s_axis_tready.eq(core.i.ready),
            self.m_axis_tdata.eq(core.o.payload.data),
            self.m_axis_tkeep.eq(core.o.payload.keep),
            self.m_axis_tlast.eq(core.o.payload.last),
            self.m_axis_tuser.eq(core.o.payload.user),
            self.m_axis_tvalid.eq(core.o.valid),
            core.o.ready.eq(self.m_axis_tready),
        ]
        for name, flow in self._passthrough:
            if flow == In:
                m.d.comb += getattr(core, name).eq(getattr(self, name))
            else:
                m.d.comb += getattr(self, name).eq(getattr(core, name))
        return m
