"""Stream properties shared by the formal wrappers: the AXI-stream handshake rule
(valid and payload held until ready) assumed on inputs and asserted on outputs, beat
counters, and the wrapper base that owns the ``sync`` domain.

The handshake rule is checked through registers of the previous clock (``past``), not
with ``Past`` (Amaranth 0.5 has none): in the first step the registers hold their initial
values, so nothing is required of the initial state.
"""

import os

from amaranth import *
from amaranth.asserts import AnyConst, AnySeq, Initial   # not in amaranth.hdl in 0.5
from amaranth.hdl import Assert, Assume, Cover
from amaranth.lib import stream

from inceptionn.rtl import formal

__all__ = ["FormalTop", "past", "source_rule", "Counter", "run", "slow", "SLOW",
           "AnyConst", "AnySeq", "Assert", "Assume", "Cover", "Initial"]

# Proofs that take minutes run only under `make formal` (INCEPTIONN_FORMAL=1).
SLOW = os.environ.get("INCEPTIONN_FORMAL") == "1"


def slow(depth_fast, depth_slow):
    """The depth for this run: short in `make test`, long under `make formal`."""
    return depth_slow if SLOW else depth_fast


def past(m, value, name=None, init=0):
    """``value`` one clock ago (``init`` in the first step)."""
    r = Signal(Value.cast(value).shape(), name=name, init=init)
    m.d.sync += r.eq(value)
    return r


def source_rule(m, port, check, name):
    """``check`` (Assume for an input, Assert for an output) the handshake rule on the
    stream ``port``: once ``valid`` is high without ``ready``, the next clock has ``valid``
    high and the same payload."""
    payload = Value.cast(port.payload)
    stalled = past(m, port.valid & ~port.ready, name=f"{name}_stalled")
    held = past(m, payload, name=f"{name}_held")
    with m.If(stalled):
        m.d.comb += check(port.valid, f"{name}: valid dropped before ready")
        m.d.comb += check(payload == held, f"{name}: payload changed before ready")


class Counter:
    """Counts the clocks where ``cond`` is high (wrapping; ``width`` bits)."""

    def __init__(self, m, cond, width=16, name="count"):
        self.value = Signal(width, name=name)
        m.d.sync += self.value.eq(self.value + cond)


class FormalTop(Elaboratable):
    """A formal wrapper: owns the ``sync`` domain and holds its reset low (or drives it
    from ``self.rst`` when a subclass sets one)."""

    rst = None

    @property
    def clk(self):
        # A top-level port: a clock tied to a constant would let the flow fold every
        # flip-flop into its initial value.
        if not hasattr(self, "_clk"):
            self._clk = Signal(name="clk")
        return self._clk

    def domain(self, m):
        m.domains.sync = ClockDomain()
        m.d.comb += [ClockSignal().eq(self.clk),
                     ResetSignal().eq(self.rst if self.rst is not None else 0)]


def run(top, name, *, mode="bmc", depth=20, expect="PASS", **kw):
    """Run one check and require ``expect`` (PASS, or FAIL for an injected bug, in which
    case a counterexample trace must exist)."""
    kw.setdefault("script", ["memory_map"])     # small FIFO RAMs: faster as flip-flops
    # make formal's tasks in build/formal/<task>, make test's short ones beside them in
    # build/formal/quick/<task>, so that a quick run never replaces a full one's traces.
    kw.setdefault("workdir", formal.FORMAL_BUILD if SLOW else formal.FORMAL_BUILD / "quick")
    res = formal.check(top, name, mode=mode, depth=depth, ports=[top.clk], **kw)
    print(res.summary())
    assert res.status == expect, res.summary() + "\n" + res.log[-3000:]
    if expect == "FAIL":
        assert res.traces, "a failed proof must leave a counterexample trace"
    return res
