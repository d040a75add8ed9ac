"""Simulation-only top: TX engine -> link FIFO with random stalls -> RX engine.

Models two NICs back to back: what the host hands the transmitter is what the other
host receives, through a link that buffers and stalls at random (a pseudo-random
LFSR gates the FIFO's output), so both engines see bursty, backpressured traffic.

Ports: the TX engine's input as ``i``, the RX engine's output as ``o`` (``AxisTop``
names them ``s_axis_*`` / ``m_axis_*``), one shared ``enable``/``dscp``, TX ``k`` and
``codec`` (the wire format version; RX decodes both).
Counters are the end-to-end view: frames in, compressed, fall-back, dropped and the
payload bytes in from TX; frames out, decompressed, bypassed (by RX), malformed and the
payload bytes out from RX. The engines' own counters are tested in their benches.

The board self-test (hw/selftest.py, ``SelfTest``) also chains TX -> link -> RX, and is
kept apart on purpose: its link is the fault injector (no FIFO, no stalls), its
configuration is fixed at elaboration, it can swap the engines for register slices to
test the test, and it is built for the board; this top is for simulation only, with a
stalling FIFO as the link and the engines' configuration and counters as ports. What
they share is the three ``connect`` lines of the chain itself.

The engines enter this top as instances of their own Verilog modules (``inceptionn_tx``,
``inceptionn_rx``; hw/engine_instance.py), the conversions the engines' testbenches, the
compiled loop, `make verilog` and `make vc709` share.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ..hw.axis import AxisBeat, axis_signature
from ..hw.engine_instance import EngineInstance
from ..hw.wire import VERSION_DEFAULT, VERSIONS_DEFAULT
from ..rtl.blocks import engines
from ..rtl.designs import engine_designs

__all__ = ["Loopback", "loopback_design"]


class Loopback(wiring.Component):
    i: In(axis_signature())
    o: Out(axis_signature())
    enable: In(1, init=1)
    dscp: In(6, init=10)
    k: In(7, init=10)
    codec: In(1, init=1)        # 0 the paper's codec (version 1), 1 the bounded one
    version: In(2, init=VERSION_DEFAULT)       # TX: the bounded codec's wire version
    versions: In(3, init=VERSIONS_DEFAULT)     # RX: the accepted versions (mask)
    no_stall: In(1)             # 0 (default): the link stalls about a quarter of the cycles
    frames_in: Out(32)
    frames_out: Out(32)
    compressed: Out(32)
    fallback: Out(32)
    dropped: Out(32)
    decompressed: Out(32)
    bypassed: Out(32)
    malformed: Out(32)
    payload_bytes_in: Out(48)
    payload_bytes_out: Out(48)
    version1: Out(32)           # RX: decompressed frames per wire format version
    version2: Out(32)
    version3: Out(32)
    check_failed: Out(32)       # RX: version-3 frames refused by their check word

    def __init__(self, fifo_depth=64):
        self._depth = fifo_depth
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        tx_row, rx_row = engines()["tx"], engines()["rx"]
        m.submodules.tx = tx = EngineInstance(tx_row.name, tx_row.load())
        m.submodules.rx = rx = EngineInstance(rx_row.name, rx_row.load())
        m.submodules.link = link = SyncFIFOBuffered(width=AxisBeat.size, depth=self._depth)

        # 16-bit Fibonacci LFSR (taps 16, 14, 13, 11): a stall when its two low bits are 0.
        lfsr = Signal(16, init=0xACE1)
        m.d.sync += lfsr.eq(Cat(lfsr[15] ^ lfsr[13] ^ lfsr[12] ^ lfsr[10], lfsr[:15]))
        go = Signal()
        m.d.comb += go.eq(self.no_stall | (lfsr[:2] != 0))

        wiring.connect(m, wiring.flipped(self.i), tx.i)
        wiring.connect(m, rx.o, wiring.flipped(self.o))
        m.d.comb += [
            link.w_data.eq(tx.o.payload.as_value()),
            link.w_en.eq(tx.o.valid),
            tx.o.ready.eq(link.w_rdy),
            rx.i.payload.eq(link.r_data),
            rx.i.valid.eq(link.r_rdy & go),
            link.r_en.eq(rx.i.ready & go),
        ]
        for eng in (tx, rx):
            m.d.comb += [eng.enable.eq(self.enable), eng.dscp.eq(self.dscp)]
        m.d.comb += [
            tx.k.eq(self.k),
            tx.codec.eq(self.codec),
            tx.version.eq(self.version),
            rx.versions.eq(self.versions),
            self.version1.eq(rx.version1),
            self.version2.eq(rx.version2),
            self.version3.eq(rx.version3),
            self.check_failed.eq(rx.check_failed),
            self.frames_in.eq(tx.frames_in),
            self.compressed.eq(tx.compressed),
            self.fallback.eq(tx.fallback),
            self.dropped.eq(tx.dropped),
            self.payload_bytes_in.eq(tx.payload_bytes_in),
            self.frames_out.eq(rx.frames_out),
            self.decompressed.eq(rx.decompressed),
            self.bypassed.eq(rx.bypassed),
            self.malformed.eq(rx.malformed),
            self.payload_bytes_out.eq(rx.payload_bytes_out),
        ]
        return m


def loopback_design():
    from ..hw.axis import AxisTop
    return AxisTop(Loopback())


# Designs whose Verilog modules this top instantiates: (module name, factory), added to
# its build by the harness.
loopback_design.instances = tuple(engine_designs())
