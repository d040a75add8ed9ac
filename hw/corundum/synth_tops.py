"""What `make synth-report` synthesizes of the Corundum app (docs/synthesis.md).

- ``app_verilog(nic_bits)``: one interface's whole app block, the core
  (``inceptionn_app_w<W>``: adapters, side-band FIFOs, FIFO slices, registers) with
  both engines, as Verilog for one synthesis. The shell around it (``mqnic_app_block``)
  adds only wires, pass-throughs and constants, so this is the block's logic; the
  shell's constants (interface index 0 of 1) are tied here as they are there, so that
  the register decode is the one that is built.
- ``app_verilog(nic_bits, engines=False)``: the same with the engines as black boxes,
  the app's own logic alone (flattened with the engines, ABC maps the engines anew,
  and their depth moves by a level either way: docs/synthesis.md, the mapper's noise);
- ``RegsTop``, the adapters (``upsizer_64``, ...): the parts alone, to find which of them
  sets the depth.
"""

import re

from amaranth import *
from amaranth.lib import wiring

from .app import AppConfig, ENGINE_MODULES, InceptionnApp
from .engine_path import engine_ports
from .regmap import ENGINES
from .regs import AxiLiteRegs
from .width import Downsizer, Upsizer

__all__ = ["OneInterface", "app_verilog", "blackbox", "RegsTop", "upsizer_64", "downsizer_64", "in_512",
           "out_512"]



class OneInterface(wiring.Component):
    """InceptionnApp with the shell's constants for one interface tied."""

    def __init__(self, nic_bits):
        self._core = InceptionnApp(AppConfig(nic_bits=nic_bits))
        members = {n: m for n, m in self._core.signature.members.items()
                   if n not in ("if_index", "if_count")}
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self._core
        m.d.comb += [core.if_index.eq(0), core.if_count.eq(1)]
        for name, member in self.signature.members.items():
            ours, theirs = getattr(self, name), getattr(core, name)
            m.d.comb += theirs.eq(ours) if member.flow == wiring.In else ours.eq(theirs)
        return m


def blackbox(verilog, module):
    """`module`'s header and port declarations only, marked as a black box."""
    m = re.search(rf"^module {module}\(.*?\);\n(.*?)^endmodule", verilog, flags=re.M | re.S)
    if m is None:
        raise ValueError(f"no module {module} in the engine's Verilog")
    decls = [ln for ln in m.group(1).splitlines() if re.match(r"\s*(input|output)\b", ln)]
    header = verilog[m.start():m.start(1)]
    return "(* blackbox *)\n" + header + "\n".join(decls) + "\nendmodule\n"


def app_verilog(nic_bits, engines=True):
    """(Verilog text, top module name): one interface's app block with its engines, or
    with the engines as black boxes (``engines=False``: the app's own logic, its paths
    cut at the engines' ports)."""
    from inceptionn.rtl import harness
    from inceptionn.rtl.designs import DESIGNS
    top = f"inceptionn_app_w{nic_bits}_if0" + ("" if engines else "_own")
    parts = [harness.convert_uncached(OneInterface(nic_bits), top)]
    for d in ENGINE_MODULES:
        module, factory, _ = DESIGNS[d]
        text = harness.to_verilog(factory, module)
        parts.append(text if engines else blackbox(text, module))
    return "\n".join(parts), top


def _engine_side():
    """{(direction, port): (shape, init, flow at the engine)} of both engines."""
    return {(d, name): (member.shape, member.init if member.flow == wiring.In else 0,
                        member.flow)
            for d, cls in ENGINES.items() for name, member in engine_ports(cls).items()}


class RegsTop(wiring.Component):
    """The register file as the app builds it (both engines' ports), interface 0 of 1,
    its engine side as ports (counters in, configuration out) so that nothing is
    optimized away."""

    def __init__(self):
        side = _engine_side()
        self._regs = AxiLiteRegs(64, {k: v[:2] for k, v in side.items()})
        members = {n: m for n, m in self._regs.signature.members.items()
                   if n not in ("if_index", "if_count")}
        for (d, name), (shape, _, flow) in side.items():
            members[f"{d}_{name}"] = (wiring.In if flow == wiring.Out else wiring.Out)(shape)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.regs = regs = self._regs
        m.d.comb += [regs.if_index.eq(0), regs.if_count.eq(1)]
        for name, member in self.signature.members.items():
            ours = getattr(self, name)
            if name.startswith("s_axil"):
                theirs = getattr(regs, name)
            else:
                d, port = name.split("_", 1)
                theirs = regs.values[(d, port)]
            m.d.comb += theirs.eq(ours) if member.flow == wiring.In else ours.eq(theirs)
        return m


# The adapters as the app builds them, each direction of each width: without the
# side-band, which goes round them (engine_path.py).
def upsizer_64():
    return Upsizer(64, 256, 0)              # into the engine, 10G boards


def downsizer_64():
    return Downsizer(256, 64, 0)            # out of the engine, 10G boards


def in_512():
    return Downsizer(512, 256, 0)           # into the engine, 100G boards


def out_512():
    return Upsizer(256, 512, 0)             # out of the engine, 100G boards
