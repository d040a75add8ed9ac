"""Board self-test: generator -> TX engine -> (fault injector) -> RX engine -> checker.

``SelfTest`` is the platform-independent core (simulated by sim/test_selftest.py);
``VC709SelfTestTop`` puts it on the VC709: 200 MHz system clock -> MMCM -> 250 MHz,
CPU_RESET restarts the test, DIP switch 0 injects a fault, and the user LEDs show

    LED0 heartbeat (~1 Hz)      LED3..LED6 compression-ratio bar: TX beats in / out
    LED1 pass (>= pass_frames        >= 1.25, 1.5, 2, 3
         checked, none bad)     LED7 fault injection switch on
    LED2 fail (sticky)

Without the engines (``engines=False``) the chain is generator -> register slices ->
checker, and the checker expects every frame back unchanged; this tests the test.
``codec`` picks the TX engine's wire format version (and the reference's decode): "bounded"
(version 3, the checked shim, k in 1..16; the default) or "paper" (version 1, k in
1..126); the RX engine accepts that version only.
``engine_modules`` (TX, RX module names) puts the engines in as instances of their own
Verilog modules (hw/engine_instance.py), which the build then adds: `make vc709` does,
so the tree holds the very engine files `make verilog` writes.

sim/loopback_top.py (``Loopback``) is the simulation's TX -> link -> RX top; it is not
this one's building block, nor this one its: there the link is a FIFO that stalls at
random and the configuration and counters are ports; here the link is the fault
injector, the configuration is fixed, and the engines can be register slices.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.lib.wiring import In, Out

from .primitives import AxisRegisterSlice
from .selftest_check import Checker, FaultInjector
from .selftest_gen import FrameGenerator, ReferenceGenerator
from .wire import EB_K_MAX, K_MAX, K_MIN

__all__ = ["SelfTest", "VC709SelfTestTop", "RATIO_STEPS"]

# LED bar thresholds on TX beats in / beats out, as (num, den): lit when in*den >= out*num.
RATIO_STEPS = [(5, 4), (3, 2), (2, 1), (3, 1)]


def _mul_const(x, c):
    """x * c for a small constant, as shifts and adds (no DSP needed)."""
    terms = [x << i for i in range(c.bit_length()) if c >> i & 1]
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


class SelfTest(wiring.Component):
    fault: In(1)
    heartbeat: Out(1)
    passing: Out(1)
    fail: Out(1)
    fail_reason: Out(7)
    ratio_bar: Out(len(RATIO_STEPS))
    frames_sent: Out(32)
    frames_ok: Out(32)
    frames_bad: Out(32)
    tx_beats_in: Out(32)
    tx_beats_out: Out(32)

    def __init__(self, *, engines=True, k=10, pass_frames=64, heartbeat_bit=26,
                 codec="bounded", engine_modules=None):
        if codec not in ("paper", "bounded"):
            raise ValueError(f"codec must be 'paper' or 'bounded', not {codec!r}")
        k_max = EB_K_MAX if codec == "bounded" else K_MAX
        if not K_MIN <= k <= k_max:
            raise ValueError(f"k must be in {K_MIN}..{k_max} for the {codec} codec, not {k}")
        if pass_frames < 1:
            raise ValueError("pass_frames must be at least 1")
        if engine_modules is not None and (not engines or len(engine_modules) != 2):
            raise ValueError("engine_modules names the TX and RX modules of a top with engines")
        self.engines = engines
        self.engine_modules = engine_modules
        self.k = k
        self.codec = codec
        self.pass_frames = pass_frames
        self.heartbeat_bit = heartbeat_bit
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.gen = gen = FrameGenerator()
        m.submodules.ref = ref = ReferenceGenerator()
        m.submodules.fault = inj = FaultInjector()
        m.submodules.check = chk = Checker(codec=self.engines)
        v2 = int(self.codec == "bounded")
        m.d.comb += [ref.k.eq(self.k), ref.v2.eq(v2), inj.fault.eq(self.fault)]

        if self.engines:
            from ..rtl.blocks import engine_classes
            tx_cls, rx_cls = engine_classes()["tx"], engine_classes()["rx"]
            if self.engine_modules:
                from .engine_instance import EngineInstance
                m.submodules.tx = tx = EngineInstance(self.engine_modules[0], tx_cls)
                m.submodules.rx = rx = EngineInstance(self.engine_modules[1], rx_cls)
            else:
                m.submodules.tx = tx = tx_cls()
                m.submodules.rx = rx = rx_cls()
            m.d.comb += [tx.enable.eq(1), tx.dscp.eq(10), tx.k.eq(self.k), tx.codec.eq(v2),
                         tx.version.eq(3), rx.enable.eq(1), rx.dscp.eq(10),
                         rx.versions.eq(0b100 if v2 else 0b001)]
        else:
            m.submodules.tx = tx = AxisRegisterSlice()
            m.submodules.rx = rx = AxisRegisterSlice()

        # generator -> TX
        m.d.comb += [
            tx.i.valid.eq(gen.o.valid),
            tx.i.payload.data.eq(gen.o.payload.data),
            tx.i.payload.keep.eq(gen.o.payload.keep),
            tx.i.payload.last.eq(gen.o.payload.last),
            tx.i.payload.user.eq(0),
            gen.o.ready.eq(tx.i.ready),
        ]
        wiring.connect(m, tx.o, inj.i)
        wiring.connect(m, inj.o, rx.i)
        wiring.connect(m, rx.o, chk.dut)
        wiring.connect(m, ref.o, chk.ref)

        with m.If(gen.o.valid & gen.o.ready):
            m.d.sync += self.tx_beats_in.eq(self.tx_beats_in + 1)
            with m.If(gen.o.payload.last):
                m.d.sync += self.frames_sent.eq(self.frames_sent + 1)
        with m.If(tx.o.valid & tx.o.ready):
            m.d.sync += self.tx_beats_out.eq(self.tx_beats_out + 1)

        # Ratio bar from registered products (one compare per step).
        bar = []
        for i, (num, den) in enumerate(RATIO_STEPS):
            lhs = Signal(36, name=f"ratio_in_{i}")
            rhs = Signal(36, name=f"ratio_out_{i}")
            m.d.sync += [lhs.eq(_mul_const(self.tx_beats_in, den)),
                         rhs.eq(_mul_const(self.tx_beats_out, num))]
            lit = Signal(name=f"ratio_lit_{i}")
            m.d.sync += lit.eq((self.tx_beats_out != 0) & (lhs >= rhs))
            bar.append(lit)
        m.d.comb += self.ratio_bar.eq(Cat(*bar))

        beat = Signal(self.heartbeat_bit + 1)
        m.d.sync += beat.eq(beat + 1)
        m.d.comb += [
            self.heartbeat.eq(beat[-1]),
            self.frames_ok.eq(chk.frames_ok),
            self.frames_bad.eq(chk.frames_bad),
            self.fail.eq(chk.fail),
            self.fail_reason.eq(chk.fail_reason),
            self.passing.eq((chk.frames_ok >= self.pass_frames) & ~chk.fail),
        ]
        return m


class VC709SelfTestTop(Elaboratable):
    """The self-test on the VC709 (see the module docstring for the LEDs)."""

    # 200 MHz * 5 = 1000 MHz VCO (600..1440 MHz for a -2 part), / 4 = 250 MHz.
    MMCM_MULT = 5.0
    MMCM_DIV = 4.0
    FREQ = 250e6

    def __init__(self, *, engines=True, k=10, pass_frames=1024, codec="bounded",
                 engine_modules=None):
        self.engines = engines
        self.engine_modules = engine_modules
        self.k = k
        self.pass_frames = pass_frames
        self.codec = codec

    def elaborate(self, platform):
        from amaranth.lib import io
        m = Module()

        clk200 = platform.request("clk200", 0, dir="-")
        m.submodules.clk200_buf = clk_buf = io.Buffer("i", clk200)
        m.submodules.rst_btn = rst_btn = io.Buffer("i", platform.request("cpu_reset", 0, dir="-"))

        mmcm_fb = Signal()
        mmcm_out = Signal()
        locked = Signal()
        m.submodules.mmcm = Instance(
            "MMCME2_BASE",
            p_CLKIN1_PERIOD=5.0, p_DIVCLK_DIVIDE=1,
            p_CLKFBOUT_MULT_F=self.MMCM_MULT, p_CLKOUT0_DIVIDE_F=self.MMCM_DIV,
            i_CLKIN1=clk_buf.i, i_CLKFBIN=mmcm_fb, o_CLKFBOUT=mmcm_fb,
            o_CLKOUT0=mmcm_out, o_LOCKED=locked,
            i_RST=rst_btn.i, i_PWRDWN=0,
        )
        m.domains.sync = ClockDomain("sync")
        m.submodules.bufg = Instance("BUFG", i_I=mmcm_out, o_O=ClockSignal("sync"))
        # Held in reset until the MMCM locks; CPU_RESET also resets the MMCM.
        m.submodules.rst_sync = ResetSynchronizer(~locked, domain="sync")

        m.submodules.selftest = st = SelfTest(
            engines=self.engines, k=self.k, pass_frames=self.pass_frames,
            heartbeat_bit=26, codec=self.codec,       # 2^27 / 250 MHz = 0.54 s per half period
            engine_modules=self.engine_modules)
        m.submodules.fault_sw = fault_sw = io.Buffer(
            "i", platform.request("dip_switch", 0, dir="-"))
        fault = Signal()
        m.submodules.fault_sync = _sync2(fault_sw.i, fault)
        m.d.comb += st.fault.eq(fault)

        leds = []
        for i in range(8):
            m.submodules[f"led{i}"] = led = io.Buffer("o", platform.request("led", i, dir="-"))
            leds.append(led)
        m.d.comb += [
            leds[0].o.eq(st.heartbeat),
            leds[1].o.eq(st.passing),
            leds[2].o.eq(st.fail),
            *(leds[3 + i].o.eq(st.ratio_bar[i]) for i in range(len(RATIO_STEPS))),
            leds[7].o.eq(fault),
        ]
        return m


def _sync2(i, o):
    from amaranth.lib.cdc import FFSynchronizer
    return FFSynchronizer(i, o, o_domain="sync")
