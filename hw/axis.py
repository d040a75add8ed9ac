"""AXI-stream beat layouts and the AxisTop wrapper.

The engines move Ethernet frames as 32-byte beats (``AxisBeat``; the lanes of
hw/engine_lanes.py as wider ones, ``beat_layout(bits)``): byte j of a frame is
``data[8*(j % B) + 7 : 8*(j % B)]`` of beat ``j // B`` for B bytes a beat; ``keep``
marks the valid bytes of the last beat, ``user`` on the last beat marks a bad frame.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .wire import BEAT_BITS

__all__ = ["AxisBeat", "axis_signature", "beat_layout"]


def beat_layout(bits):
    """A beat of ``bits`` data bits (a whole number of bytes)."""
    if bits % 8 or bits < 8:
        raise ValueError(f"a beat must be a whole number of bytes, got {bits} bits")
    return data.StructLayout({"data": bits, "keep": bits // 8, "last": 1, "user": 1})


AxisBeat = beat_layout(BEAT_BITS)


def axis_signature(bits=BEAT_BITS):
    return stream.Signature(AxisBeat if bits == BEAT_BITS else beat_layout(bits))


def _axis_members(prefix, flow, bits):
    # flow is In for a slave (s_axis) port, Out for a master (m_axis) port.
    back = Out if flow is In else In
    return {
        f"{prefix}_tdata": flow(bits),
        f"{prefix}_tkeep": flow(bits // 8),
        f"{prefix}_tlast": flow(1),
        f"{prefix}_tuser": flow(1),
        f"{prefix}_tvalid": flow(1),
        f"{prefix}_tready": back(1),
    }


class AxisTop(wiring.Component):
    """Wraps a core whose ``i``/``o`` members are AXI streams, under AXI port names.

    The Verilog module then has ``s_axis_tdata[W-1:0]``, ``s_axis_tkeep[W/8-1:0]`` (W the
    core's beat width, 256 for the engines),
    ``s_axis_tlast``, ``s_axis_tuser``, ``s_axis_tvalid``, ``s_axis_tready`` and the
    same ``m_axis_*`` set, which is what a NIC's AXI-stream fabric (and
    cocotbext-axi's bus discovery) expects. Every other port of the core (configuration,
    counters) is passed through under its own name.
    """

    def __init__(self, core):
        self.core = core
        bits = len(core.i.payload.data)
        members = {**_axis_members("s_axis", In, bits), **_axis_members("m_axis", Out, bits)}
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
