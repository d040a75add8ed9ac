"""Pipeline: an engine's top module built as a readable diagram.

``Pipeline(m)`` adds stages by name, connects their ports (streams and the other
interfaces between stages, each a ``wiring.Signature``; directly or through a named
FIFO) with ``wiring.connect``, and records an edge for every connection it makes, so
that ``docs/architecture.md`` shows the engine as it is elaborated (``diagram``) and a
test checks the document against the code. There are no other wires between stages.

A port is ``"stage.port"`` (a member of the stage's signature, usually an interface);
a bare ``"stage"`` stands for that stage's own ports named as the other end's members
(a shared block such as the PacketMatcher, whose ports are not grouped).
"""

from amaranth.hdl import Fragment
from amaranth.lib import wiring

from .primitives import StreamFifo

__all__ = ["Pipeline", "diagram"]


class _Ports:
    """Some of a component's own ports as one interface (for ``wiring.connect``)."""

    def __init__(self, component, names):
        members = component.signature.members
        self.signature = wiring.Signature({n: members[n] for n in names})
        for n in names:
            setattr(self, n, getattr(component, n))


class Pipeline:
    """Stages and the edges between them, for one engine. Ports are named
    ``"stage.port"``; ``"in"``/``"out"`` name the engine's own ``i``/``o`` streams."""

    def __init__(self, m, owner):
        self.m, self.owner = m, owner
        self.stages = {}
        self.fifos = {}
        self.edges = []          # (src stage, dst stage, label)

    def add(self, name, component):
        self.m.submodules[name] = component
        self.stages[name] = component
        return component

    def _port(self, ref, names=None):
        if ref in ("in", "out"):
            port = getattr(self.owner, {"in": "i", "out": "o"}[ref])
            return ref, wiring.flipped(port)
        stage, _, attr = ref.partition(".")
        if stage not in self.stages:
            raise KeyError(f"pipeline has no stage {stage!r}")
        obj = self.stages[stage]
        if not attr:
            return stage, _Ports(obj, names)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return stage, obj

    def connect(self, src, dst, label=""):
        """Connect port ``src`` to ``dst`` (``"stage.port"``, or ``"stage"`` for the
        stage's own ports named as the other end's members); one edge, src -> dst."""
        if "." not in src and src not in ("in", "out"):
            d_name, d_port = self._port(dst)
            s_name, s_port = self._port(src, list(d_port.signature.members))
        else:
            s_name, s_port = self._port(src)
            d_name, d_port = self._port(dst, list(s_port.signature.members))
        wiring.connect(self.m, s_port, d_port)
        self.edges.append((s_name, d_name, label or src.partition(".")[2] or "stream"))

    def fifo(self, name, src, dst, shape, depth, *, fast=False, label=""):
        """A StreamFifo ``name`` between ``src`` and ``dst``; returns it."""
        f = StreamFifo(shape, depth, fast=fast)
        self.m.submodules[name] = f
        self.fifos[name] = f
        s_name, s_port = self._port(src)
        d_name, d_port = self._port(dst)
        wiring.connect(self.m, s_port, f.i)
        wiring.connect(self.m, f.o, d_port)
        self.edges.append((s_name, d_name, f"{label or name} [{depth}]"))
        return f

    def mermaid(self):
        """A Mermaid flowchart: stages as boxes (name and class), edges labelled."""
        ids = {"in": "eng_i", "out": "eng_o"}          # "in"/"end" are Mermaid words
        lines = ["flowchart LR", "  eng_i((i))"]
        for name in self.stages:
            ids[name] = name
            lines.append(f'  {name}["{name}<br/><small>{type(self.stages[name]).__name__}</small>"]')
        lines.append("  eng_o((o))")
        for s, d, label in self.edges:
            lines.append(f'  {ids[s]} -->|"{label}"| {ids[d]}')
        return "\n".join(lines)


def diagram(engine):
    """The Mermaid flowchart of ``engine`` (an elaboratable whose ``elaborate`` builds a
    Pipeline and keeps it as ``engine.pipeline``)."""
    # Elaborated in full, so that no stage is left "created but never used" (Amaranth
    # warns when such an object is collected, wherever that happens later).
    Fragment.get(engine, None)
    return engine.pipeline.mermaid()
