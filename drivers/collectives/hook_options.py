"""The DDP hook's options checked (hook.py's IncState): defaults where an option is None
(the address a rank listens on included), a clear error where a choice cannot apply to
the method, wire, mode or transport. What applies is read from the method's compressor
(what it declares: `needs`, `collective`, `feedback`, `ring_native`), so a new
compressor needs no switch here."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from ... import golden
from . import compressors
from .compressors.inceptionn import BOUNDS
from .decide import DECIDES
from .transports import DEFAULT_CHUNK

__all__ = ["BOUNDS", "MODES", "WIRES", "CODECS", "TRANSPORTS", "METHODS", "Options", "resolve"]

MODES = ("inc", "wa")
WIRES = ("software", "nic", "emulate")
CODECS = ("bounded", "paper")
# "socket": the ring on the project's sockets, coded on the host (golden.fast); "torch":
# the ring over the process group's point-to-point (NCCL or gloo), coded on the bucket's
# device (device_codec.py), so a CUDA bucket never leaves its GPU uncompressed.
TRANSPORTS = ("socket", "torch")
# Every compressor of compressors/ (INCEPTIONN's among them), on its own collective;
# what each takes from the hook (a density, the bucket's layer sizes, the codec's
# settings, error feedback as an option) it declares itself (compressors.needs).
METHODS = tuple(compressors.METHODS)


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


@dataclass(frozen=True)
class Options:
    """The hook's settings as they apply: every default filled in, every choice checked."""
    k: int                  # the error bound 2^-k
    method_kw: dict         # the compressor's parameters (density as "k", feedback)
    chunk: int              # floats per pipelined chunk
    bound: str              # "scaled" / "absolute"
    share: float
    error_feedback: bool
    ring_native: bool       # the ring transports sum the bucket themselves
    ring_fed: bool          # the ring records its loss into the memory
    decide: str


def resolve(*, method, codec, error_bound, wire, mode, density, method_kw, chunk_floats,
            bound, share, error_feedback, transport, decide) -> Options:
    """IncState's options checked, in the order a user meets them; what applies is read
    from the method's compressor (its `needs`, `collective`, `feedback`,
    `ring_native`), not from its name."""
    _one_of("mode", mode, MODES)
    if method not in METHODS:
        raise ValueError(f"method {method!r} is not available in the hook; choose one of "
                         f"{METHODS}")
    _one_of("codec", codec, CODECS)
    _one_of("wire", wire, WIRES)
    if mode == "wa" and wire == "software":
        raise ValueError("mode 'wa' carries float32 (wire 'nic' or 'emulate'), not the "
                         "software wire")
    _one_of("transport", transport, TRANSPORTS)
    # The torch ring codes on the device with the NIC's codecs: a method that takes the
    # codec's settings (INCEPTIONN's), on the software wire, in mode "inc".
    if transport == "torch" and ("codec" not in compressors.needs(method)
                                 or (wire, mode) != ("software", "inc")):
        raise ValueError("transport 'torch' carries method 'inceptionn' on wire 'software' "
                         f"in mode 'inc', not {method!r} / {wire!r} / {mode!r}")
    chunk = _chunk(chunk_floats, transport)
    kw = _method_kw(method, density, method_kw)
    k = _error_bound_k(error_bound)
    # The method's compressor as the others are made (bad parameters fail here).
    coded = dict(k=k, codec=codec) if "codec" in compressors.needs(method) else {}
    probe = compressors.make(method, **coded, **kw)
    bound = _bound(probe, codec, mode, bound)
    share = _share(share)
    feedback = _feedback(method, probe, mode, transport, bound, error_feedback)
    if "feedback" in probe.needs:
        kw["feedback"] = feedback
    return Options(k=k, method_kw=kw, chunk=chunk, bound=bound, share=share,
                   error_feedback=feedback, ring_native=probe.ring_native,
                   ring_fed=feedback and probe.collective == "ring_inc",
                   decide=_decide_mode(decide, method, probe, mode, wire))


def _one_of(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def _chunk(chunk_floats, transport) -> int:
    if chunk_floats is None:
        from .transports.torch_ring import DEFAULT_CHUNK as TORCH_CHUNK
        chunk_floats = TORCH_CHUNK if transport == "torch" else DEFAULT_CHUNK
    if not isinstance(chunk_floats, int) or chunk_floats < 1:
        raise ValueError(f"chunk_floats must be a positive int, got {chunk_floats!r}")
    return chunk_floats


def _method_kw(method, density, method_kw) -> dict:
    """The compressor's parameters: method_kw, and density as its "k" where it takes one."""
    kw = dict(method_kw or {})
    for name, instead in (("k", "give a sparsifier's fraction as density=, an error "
                                "bound as error_bound="),
                          ("feedback", "give error_feedback=")):
        if name in kw:
            raise ValueError(f"method_kw has no {name!r}: {instead}")
    takes = compressors.needs(method)
    if density is not None:
        if "k" not in takes:
            dense = [m for m in METHODS if "k" in compressors.needs(m)]
            raise ValueError(f"density applies to {tuple(dense)}, not {method!r}")
        kw["k"] = float(density)
    elif "k" in takes:
        raise ValueError(f"method {method!r} needs density= (the fraction of values kept)")
    return kw


def _bound(comp, codec, mode, bound) -> str:
    """"scaled" by default where the method codes with the bounded codec on the ring
    (mode "inc"); the worker-aggregator codes with the absolute bound (not built)."""
    scalable = "codec" in comp.needs and mode == "inc" and codec == "bounded"
    if bound is None:
        bound = "scaled" if scalable else "absolute"
    if bound not in BOUNDS:
        raise ValueError(f"bound must be one of {BOUNDS}, got {bound!r}")
    if bound == "scaled" and not scalable:
        raise ValueError("bound='scaled' needs method 'inceptionn' with the bounded codec in "
                         "mode 'inc' (the paper's codec and mode 'wa' take bound='absolute')")
    return bound


def _share(share) -> float:
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share!r}")
    return float(share)


def _feedback(method, comp, mode, transport, bound, feedback) -> bool:
    """Whether error feedback is on, read from how the compressor keeps its residual: as
    part of its method (`comp.feedback`, fixed: the sparsifiers), as its option ("feedback"
    in `needs`: TernGrad), or through the ring's loss (a dense compressor on the ring,
    `ring_inc`: INCEPTIONN, truncation), which the socket ring records on every wire (on
    the NIC path the sender models its engine's loss with the golden codec); the torch
    transport keeps no memory."""
    option = "feedback" in comp.needs
    if comp.feedback and not option:
        if feedback is False:
            raise ValueError(f"{method!r} keeps its residual as part of the method "
                             "(error_feedback cannot be turned off)")
        return True
    recordable = mode == "inc" and transport == "socket" and comp.collective == "ring_inc"
    if feedback is None:        # the absolute bound alone is the paper's exchange
        feedback = bound == "scaled" and recordable
    if feedback and not (recordable or option):
        raise ValueError("error_feedback needs method 'inceptionn' or a dense compressor "
                         "('truncation', 'inceptionn_eb') in mode 'inc' on the socket "
                         "transport, or 'terngrad' (elsewhere the codec's loss is not seen "
                         "on this rank; the sparsifiers keep their memory as part of the "
                         "method)")
    return bool(feedback)


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
