"""golden's engines configured as the RTL engines' ports are, for the testbenches that
compare the RTL with them. TX: the codec port and, for the bounded codec, the version port
(2 or 3; 3 where none is named, other values bypass the frame); RX: the accepted versions
(a mask port; version 3 only where none is named, as golden.rx_frame's default)."""

from .. import golden

__all__ = ["RTL_VERSIONS", "rtl_version", "tx_frame", "rx_frame"]

RTL_VERSIONS = (1, 2, 3)


def rtl_version(codec, version=None):
    """The wire version the RTL TX writes for ``codec`` and its version port (None where
    the port is left at its default, 3), or None where the port's value bypasses."""
    if golden.check_codec(codec) == "paper":
        return 1
    version = 3 if version is None else int(version)
    return version if version in (2, 3) else None


def tx_frame(frame, *, codec=golden.CODEC_DEFAULT, version=None, **kw):
    """golden.tx_frame as the RTL TX with ``codec`` and its version port: a version port
    value out of range forwards the frame unchanged, as a disabled engine would."""
    v = rtl_version(codec, version)
    if v is None:
        return golden.tx_frame(frame, codec=codec, **{**kw, "enable": False})
    return golden.tx_frame(frame, codec=codec, version=v, **kw)


def rx_frame(frame, *, versions=golden.RX_VERSIONS_DEFAULT, **kw):
    """golden.rx_frame accepting ``versions`` (by default version 3 only, as the RTL
    RX's mask port)."""
    return golden.rx_frame(frame, versions=versions, **kw)
