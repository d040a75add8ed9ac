"""Stream payloads as plain ints for stage testbenches: a ``data.StructLayout``'s fields
packed into the integer a testbench drives, and unpacked from the one it reads."""

from amaranth import Shape

__all__ = ["pack", "unpack"]


def _mask(field):
    return (1 << Shape.cast(field.shape).width) - 1


def pack(layout, fields):
    """``{name: value}`` -> the payload integer; missing fields are 0, values are cut to
    their field's width."""
    v = 0
    for name, f in layout:
        v |= (fields.get(name, 0) & _mask(f)) << f.offset
    return v


def unpack(layout, value):
    """The payload integer -> ``{name: value}`` for every field of ``layout``."""
    return {name: (value >> f.offset) & _mask(f) for name, f in layout}
