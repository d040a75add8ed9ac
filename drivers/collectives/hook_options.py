"""The DDP hook's options checked (hook.py's IncState): defaults where an option is None
(the address a rank listens on included), a clear error where a choice cannot apply to
the method, wire, mode or transport."""

from __future__ import annotations

import os
import socket

from ... import golden
from .compressors.inceptionn import BOUNDS
from .decide import DECIDES

__all__ = ["BOUNDS"]


def _default_host() -> str:
    if os.environ.get("INCEPTIONN_HOST"):
        return os.environ["INCEPTIONN_HOST"]
    master = os.environ.get("MASTER_ADDR", "127.0.0.1")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((master, 9))          # no packet is sent; picks the route's address
            return s.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def _error_bound_k(bound) -> int:
    """k of an error bound 2^-k given as a number (0.0009765625, 2**-10) or text."""
    if isinstance(bound, bool) or not isinstance(bound, (int, float, str)):
        raise ValueError(f"error_bound must be 2^-k (a number or text), got {bound!r}")
    return golden.parse_error_bound(repr(float(bound)) if not isinstance(bound, str) else bound)


def _takes_feedback(comp) -> tuple:
    """("feedback",) where error feedback is the compressor's option (TernGrad's)."""
    import inspect
    return ("feedback",) if "feedback" in inspect.signature(type(comp)).parameters else ()


def _bound_and_feedback(method, comp, codec, mode, bound, share, feedback, transport):
    """The bound ("scaled" / "absolute") and whether error feedback is on: defaults where
    None, a clear error where the choice cannot apply. `comp` is the method's compressor
    (its declared `needs`, `collective`, `feedback` say what applies). The socket ring
    scales and records its loss on every wire (software, nic, emulate: on the NIC path s
    rides the control connection and the sender models its engine's loss with the golden
    codec); the torch transport scales (s in each chunk's frame) but keeps no memory;
    the worker-aggregator codes with the absolute bound (not built). A compressor that
    keeps a residual (`comp.feedback`: the sparsifiers) has it as part of its method;
    TernGrad takes it as an option; a dense compressor on the ring (`ring_inc`: INCEPTIONN,
    truncation) through the ring's loss."""
    scalable = "codec" in comp.needs and mode == "inc" and codec == "bounded"
    if bound is None:
        bound = "scaled" if scalable else "absolute"
    if bound not in BOUNDS:
        raise ValueError(f"bound must be one of {BOUNDS}, got {bound!r}")
    if bound == "scaled" and not scalable:
        raise ValueError("bound='scaled' needs method 'inceptionn' with the bounded codec in "
                         "mode 'inc' (the paper's codec and mode 'wa' take bound='absolute')")
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share!r}")
    if comp.feedback and not _takes_feedback(comp):
        if feedback is False:
            raise ValueError(f"{method!r} keeps its residual as part of the method "
                             "(error_feedback cannot be turned off)")
        return bound, float(share), True
    recordable = mode == "inc" and transport == "socket" and comp.collective == "ring_inc"
    if feedback is None:        # the absolute bound alone is the paper's exchange
        feedback = bound == "scaled" and recordable
    if feedback and not (recordable or _takes_feedback(comp)):
        raise ValueError("error_feedback needs method 'inceptionn' or a dense compressor "
                         "('truncation', 'inceptionn_eb') in mode 'inc' on the socket "
                         "transport, or 'terngrad' (elsewhere the codec's loss is not seen "
                         "on this rank; the sparsifiers keep their memory as part of the "
                         "method)")
    return bound, float(share), bool(feedback)


def _decide_mode(decide, method, comp, mode, wire) -> str:
    """The per-bucket path setting: "auto" by default for INCEPTIONN's ring on the software
    wire (the NIC wires exist to carry the ring through the NIC; the compressors keep
    their own collectives). The plain paths apply where the ring sums the bucket itself
    (`comp.ring_native`)."""
    plain_ok = comp.ring_native and mode == "inc" and wire == "software"
    if decide is None:
        return "auto" if plain_ok and comp.collective == "ring_inc" else "ring"
    if decide not in DECIDES:
        raise ValueError(f"decide must be one of {DECIDES}, got {decide!r}")
    if decide != "ring" and not plain_ok:
        raise ValueError(f"decide={decide!r} needs method 'inceptionn' or 'none' in mode "
                         f"'inc' on wire 'software', not {method!r} / {mode!r} / {wire!r}")
    return decide
