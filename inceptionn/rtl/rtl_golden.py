"""golden's engines at the wire versions the RTL engines implement (1 and 2), for the
testbenches that compare the RTL with them: TX writes version 1 (paper's codec) or 2
(bounded), RX accepts both. Wire version 3 (the checked shim) is in golden, golden.fast
and the compiled switch; the RTL does not implement it yet (docs/wire-format.md 10)."""

from .. import golden

__all__ = ["RTL_VERSIONS", "rtl_version", "tx_frame", "rx_frame"]

RTL_VERSIONS = (1, 2)


def rtl_version(codec):
    """The wire version the RTL TX writes for ``codec``."""
    return 1 if golden.check_codec(codec) == "paper" else 2


def tx_frame(frame, *, codec=golden.CODEC_DEFAULT, **kw):
    """golden.tx_frame writing the RTL's version of ``codec``."""
    return golden.tx_frame(frame, codec=codec, version=rtl_version(codec), **kw)


def rx_frame(frame, **kw):
    """golden.rx_frame accepting versions 1 and 2, as the RTL RX does."""
    return golden.rx_frame(frame, versions=RTL_VERSIONS, **kw)
