"""The app's register map on Corundum's application control port (``s_axil_app_ctrl``).

Built from the engines' own ports, so that a configuration input or a counter added to
an engine gets its register without an edit here: per interface, the TX engine's
configuration inputs, then its counters, from ``base``; the RX engine's the same from
``base + RX_OFFSET``. Every register is a 32-bit word; a counter wider than 32 bits
takes two (``_lo``, ``_hi``), and reading the low word latches the high word, so the
pair read low-then-high is one value even while traffic runs.

Writes to read-only or unmapped words are ignored (OKAY response); unmapped words read 0.
Configuration registers reset to the engine's own defaults.
"""

from dataclasses import dataclass

from amaranth.hdl import Shape
from amaranth.lib.wiring import In

from ...rtl.blocks import engine_classes
from .engine_path import engine_ports

__all__ = ["Reg", "register_map", "global_registers", "interface_registers", "APP_MAGIC", "APP_VERSION", "IF_STRIDE", "RX_OFFSET",
           "ADDR_BITS", "MAX_IF_COUNT", "ENGINES"]

APP_MAGIC = 0x494E4350          # "INCP": a driver's check that this app is there
APP_VERSION = 1
IF_STRIDE = 0x100               # interface i's registers start at (i + 1) * IF_STRIDE
RX_OFFSET = 0x80
ADDR_BITS = 12                  # the window decoded (4 KiB); higher address bits alias
MAX_IF_COUNT = (1 << ADDR_BITS) // IF_STRIDE - 1

# direction -> engine class, in register order (the registry's, inceptionn/rtl/blocks.py).
ENGINES = engine_classes()


@dataclass(frozen=True)
class Reg:
    offset: int                 # byte address
    name: str                   # "if0.tx.k", "if1.rx.frames_in_lo", "id"
    access: str                 # "rw" or "ro"
    width: int                  # bits of the value in this word (from bit 0)
    init: int = 0               # reset value (rw) or the constant (global ro words)
    port: tuple = ()            # (direction, engine port, bit offset), or () for global words


def global_registers(if_count, nic_bits):
    """The words before interface 0's (``if_count`` is the core's input in hardware)."""
    return [Reg(0x00, "id", "ro", 32, APP_MAGIC), Reg(0x04, "version", "ro", 32, APP_VERSION),
            Reg(0x08, "if_count", "ro", 32, if_count), Reg(0x0C, "nic_bits", "ro", 32, nic_bits)]


def interface_registers(i):
    """Interface i's words: byte offsets from 0 of the map (base (i + 1) * IF_STRIDE)."""
    regs = []
    for d, cls in ENGINES.items():
        off = (i + 1) * IF_STRIDE + (RX_OFFSET if d == "rx" else 0)
        end = off + RX_OFFSET
        ports = engine_ports(cls)
        # configuration first, then the counters
        ordered = ([(n, mb) for n, mb in ports.items() if mb.flow == In]
                   + [(n, mb) for n, mb in ports.items() if mb.flow != In])
        for name, member in ordered:
            width = Shape.cast(member.shape).width
            rw = member.flow == In
            if rw and width > 32:
                raise ValueError(f"{d} configuration port {name} is wider than a register")
            words = (width + 31) // 32
            for w in range(words):
                suffix = "" if words == 1 else ("_lo", "_hi", "_w2", "_w3")[w]
                regs.append(Reg(off, f"if{i}.{d}.{name}{suffix}", "rw" if rw else "ro",
                                min(32, width - 32 * w), int(member.init or 0) if rw else 0,
                                (d, name, 32 * w)))
                off += 4
        if off > end:
            raise ValueError(f"the {d} engine's registers overflow their {RX_OFFSET:#x} bytes")
    return regs


def register_map(if_count, nic_bits):
    """Every register word, in address order."""
    if not 1 <= if_count <= MAX_IF_COUNT:
        raise ValueError(f"the register map holds 1..{MAX_IF_COUNT} interfaces, got {if_count}")
    regs = global_registers(if_count, nic_bits)
    for i in range(if_count):
        regs += interface_registers(i)
    return regs


def markdown_table(if_count=1, nic_bits=64):
    """The map as a Markdown table (interface 0; the others repeat at IF_STRIDE)."""
    lines = ["| offset | name | access | bits | reset |", "|---|---|---|---|---|"]
    for r in register_map(if_count, nic_bits):
        init = f"{r.init:#x}" if r.access == "rw" or not r.port else "-"
        lines.append(f"| {r.offset:#05x} | {r.name} | {r.access} | {r.width} | {init} |")
    return "\n".join(lines)
