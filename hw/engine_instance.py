"""An engine as an instance of its own Verilog module, for tops that hold both engines.

The engines are converted once (``inceptionn verilog``'s ``inceptionn_tx`` and
``inceptionn_rx``, also what the testbenches and the compiled loop run); a top that holds
them (the simulation's loopback, the VC709 self-test) instantiates those modules under
AxisTop's port names instead of converting the engines again inside itself, which took
longer than the rest of such a build. Whoever builds the top adds the modules' Verilog.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In

__all__ = ["EngineInstance"]


class EngineInstance(wiring.Component):
    """The interface of `engine_cls` (its class annotations: streams ``i``/``o``,
    configuration in, counters out), elaborated as an instance of Verilog module `module`."""

    def __init__(self, module, engine_cls):
        self._module = module
        # The engine's declared ports, without building one.
        super().__init__({name: member for name, member in engine_cls.__annotations__.items()
                          if isinstance(member, wiring.Member)})

    def elaborate(self, platform):
        m = Module()
        ports = {"i_clk": ClockSignal(), "i_rst": ResetSignal()}
        for prefix, st, d_in, d_out in (("s_axis", self.i, "i_", "o_"),
                                        ("m_axis", self.o, "o_", "i_")):
            for field in ("data", "keep", "last", "user"):
                ports[f"{d_in}{prefix}_t{field}"] = st.payload[field]
            ports[f"{d_in}{prefix}_tvalid"] = st.valid
            ports[f"{d_out}{prefix}_tready"] = st.ready
        for name, member in self.signature.members.items():
            if name not in ("i", "o"):
                ports[("i_" if member.flow == In else "o_") + name] = getattr(self, name)
        m.submodules.engine = Instance(self._module, **ports)
        return m
