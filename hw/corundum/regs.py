"""AxiLiteRegs: one interface's part of the register map (regmap.py) as an AXI-Lite slave.

The shell gives every interface's core the same AXI-Lite inputs and ORs their outputs:
a core answers only the addresses of its own window (``if_index``), and interface 0's
core also answers the global words and every address no interface owns (reads 0), so
each request gets exactly one answer. Outputs of a core that is not answering are 0.

A write takes address and data in the same clock (``awready``/``wready`` rise together
when both are valid) and is answered OKAY; byte strobes apply; writes to read-only or
unmapped words are ignored. A read takes two clocks (address, then the word), so the
read mux sits between registers. Reading the low word of a counter wider than 32 bits
latches its high word: read low, then high, for one consistent value.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .regmap import ADDR_BITS, IF_STRIDE, MAX_IF_COUNT, global_registers, interface_registers

__all__ = ["AxiLiteRegs", "axil_members"]

_SEL = IF_STRIDE.bit_length() - 1          # address bits below the window select


def axil_members(prefix, addr_bits=ADDR_BITS, data_bits=32):
    """AXI-Lite slave ports under Corundum's names (``<prefix>_awaddr``, ...)."""
    return {
        f"{prefix}_awaddr": In(addr_bits), f"{prefix}_awprot": In(3),
        f"{prefix}_awvalid": In(1), f"{prefix}_awready": Out(1),
        f"{prefix}_wdata": In(data_bits), f"{prefix}_wstrb": In(data_bits // 8),
        f"{prefix}_wvalid": In(1), f"{prefix}_wready": Out(1),
        f"{prefix}_bresp": Out(2), f"{prefix}_bvalid": Out(1), f"{prefix}_bready": In(1),
        f"{prefix}_araddr": In(addr_bits), f"{prefix}_arprot": In(3),
        f"{prefix}_arvalid": In(1), f"{prefix}_arready": Out(1),
        f"{prefix}_rdata": Out(data_bits), f"{prefix}_rresp": Out(2),
        f"{prefix}_rvalid": Out(1), f"{prefix}_rready": In(1),
    }


class AxiLiteRegs(wiring.Component):
    """Ports: ``s_axil_*``, ``if_index``, ``if_count``; ``values[(direction, port)]``:
    signals driven here for configuration and read here for counters."""

    def __init__(self, nic_bits, ports):
        self.nic_bits = nic_bits
        self.regs = interface_registers(0)
        super().__init__({**axil_members("s_axil"),
                          "if_index": In(range(MAX_IF_COUNT)),
                          "if_count": In(range(MAX_IF_COUNT + 1))})
        self.values = {key: Signal(shape, name=f"{key[0]}_{key[1]}", init=init)
                       for key, (shape, init) in ports.items()}

    def _mine(self, addr):
        sel = addr[_SEL:ADDR_BITS]
        return ((sel == self.if_index + 1)
                | ((self.if_index == 0) & ((sel == 0) | (sel > self.if_count))))

    def elaborate(self, platform):
        m = Module()
        a = self
        word = lambda off: (off % IF_STRIDE) >> 2    # noqa: E731  word index in a window

        # Write channel.
        bvalid = Signal()
        take_w = a.s_axil_awvalid & a.s_axil_wvalid & ~bvalid & self._mine(a.s_axil_awaddr)
        m.d.comb += [a.s_axil_awready.eq(take_w), a.s_axil_wready.eq(take_w),
                     a.s_axil_bvalid.eq(bvalid)]
        with m.If(take_w):
            m.d.sync += bvalid.eq(1)
        with m.Elif(a.s_axil_bready):
            m.d.sync += bvalid.eq(0)
        own_w = take_w & (a.s_axil_awaddr[_SEL:ADDR_BITS] == self.if_index + 1)
        waddr = a.s_axil_awaddr[2:_SEL]
        for r in self.regs:
            if r.access != "rw":
                continue
            sig = self.values[r.port[:2]]
            new = Cat(*(Mux(a.s_axil_wstrb[b], a.s_axil_wdata[8 * b:8 * b + 8],
                            sig[8 * b:8 * b + 8])
                        for b in range((len(sig) + 7) // 8)))
            with m.If(own_w & (waddr == word(r.offset))):
                m.d.sync += sig.eq(new[:len(sig)])

        # Read channel: address, then data.
        raddr = Signal(_SEL - 2)
        rsel = Signal(range(1 << (ADDR_BITS - _SEL)))
        rpend = Signal()
        rvalid = Signal()
        rdata = Signal(32)
        m.d.comb += [
            a.s_axil_arready.eq(~rpend & ~rvalid & self._mine(a.s_axil_araddr)),
            a.s_axil_rvalid.eq(rvalid),
            a.s_axil_rdata.eq(Mux(rvalid, rdata, 0)),
        ]
        with m.If(a.s_axil_arvalid & a.s_axil_arready):
            m.d.sync += [raddr.eq(a.s_axil_araddr[2:_SEL]),
                         rsel.eq(a.s_axil_araddr[_SEL:ADDR_BITS]), rpend.eq(1)]
        with m.If(rvalid & a.s_axil_rready):
            m.d.sync += rvalid.eq(0)
        latched = {r.port: Signal(r.width, name=f"latch_{r.port[0]}_{r.port[1]}_{r.port[2]}")
                   for r in self.regs if r.access == "ro" and r.port[2] >= 32}
        with m.If(rpend):
            m.d.sync += [rpend.eq(0), rvalid.eq(1), rdata.eq(0)]
            with m.If(rsel == 0):
                with m.Switch(raddr):
                    for r in global_registers(0, self.nic_bits):
                        with m.Case(r.offset >> 2):
                            m.d.sync += rdata.eq(self.if_count if r.name == "if_count"
                                                 else r.init)
            with m.Elif(rsel == self.if_index + 1):
                with m.Switch(raddr):
                    for r in self.regs:
                        with m.Case(word(r.offset)):
                            if r.port in latched:
                                m.d.sync += rdata.eq(latched[r.port])
                                continue
                            v = self.values[r.port[:2]]
                            lo = r.port[2]
                            m.d.sync += rdata.eq(v[lo:lo + 32])
                            for hi in latched:
                                if hi[:2] == r.port[:2] and hi[2] > lo:
                                    m.d.sync += latched[hi].eq(v[hi[2]:hi[2] + 32])
        return m
