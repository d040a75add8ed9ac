"""Wire-format constants (docs/wire-format.md): golden's single home for them.

hw/wire.py holds the gateware's copy (golden/ must not import the gateware);
tests/test_wire_constants.py checks that both agree name by name.
"""

__all__ = [
    "BEAT_BYTES", "BEAT_BITS", "MAX_FRAME_BYTES", "MAX_FRAME_BEATS",
    "SHIM_MAGIC", "SHIM_BYTES", "DSCP_DEFAULT", "TOS_DEFAULT", "K_MIN", "K_MAX", "K_DEFAULT",
    "GROUP_VALUES", "MAX_PAYLOAD", "SHIM_MAGIC_V1", "SHIM_MAGIC_V2", "EB_K_MIN", "EB_K_MAX",
    "CODECS", "CODEC_DEFAULT", "CODEC_MAGIC", "MAGIC_CODEC",
    "SHIM_MAGIC_V3", "SHIM_BYTES_V3", "VERSIONS", "VERSION_MAGIC", "MAGIC_VERSION", "VERSION_CODEC",
    "CODEC_VERSION", "RX_VERSIONS_DEFAULT", "shim_bytes",
]

BEAT_BYTES = 32                                  # one 256-bit AXI-stream beat
BEAT_BITS = 8 * BEAT_BYTES
MAX_FRAME_BYTES = 9216                           # >= 9022: a 9000-byte MTU jumbo frame with a VLAN tag
MAX_FRAME_BEATS = MAX_FRAME_BYTES // BEAT_BYTES  # 288
SHIM_MAGIC = 0xC5                                # byte 2 of the 4-byte shim: magic and format version 1
SHIM_MAGIC_V1 = SHIM_MAGIC                       # version 1: the paper's codec
SHIM_MAGIC_V2 = 0xC6                             # version 2: the bounded codec (inceptionn_eb); byte 3 = k
SHIM_MAGIC_V3 = 0xC7                             # version 3: the bounded codec and a check word
SHIM_BYTES = 4                                   # versions 1 and 2
SHIM_BYTES_V3 = 8                                # version 3: L, magic, k, then the 32-bit check word
DSCP_DEFAULT = 10                                # the paper's tag, reserved network-wide
TOS_DEFAULT = DSCP_DEFAULT << 2                  # the IPv4 ToS byte: 0x28 (ECN 00)
K_MIN, K_MAX, K_DEFAULT = 1, 126, 10             # error bound 2^-k (version 1, the paper's codec)
EB_K_MIN, EB_K_MAX = 1, 16                       # version 2: the bound |error| <= 2^-k holds up to 16
GROUP_VALUES = 8                                 # values per group (one 16-bit tag word)
MAX_PAYLOAD = 0xFFFF                             # the shim holds L in 16 bits

# The two value codecs by name: "paper" (wire version 1) and "bounded" (wire version 2).
# Where a user does not choose, the bounded codec is used; the block-level model
# functions that mirror the version-1 blocks keep the paper's as their default.
CODECS = ("paper", "bounded")
CODEC_DEFAULT = "bounded"
CODEC_MAGIC = {"paper": SHIM_MAGIC_V1, "bounded": SHIM_MAGIC_V2}
MAGIC_CODEC = {v: c for c, v in CODEC_MAGIC.items()}
MAGIC_CODEC[SHIM_MAGIC_V3] = "bounded"

# Wire format versions: their shim magic and value codec. Version 3 is version 2's codec
# with an 8-byte shim whose check word ties the payload to the frame's invariant header
# fields (docs/wire-format.md section 10): a frame no TX engine made passes it only by
# chance (2^-32). TX writes the codec's default version; RX accepts version 3 only unless
# told otherwise (the paper's reproductions name version 1).
VERSIONS = (1, 2, 3)
VERSION_MAGIC = {1: SHIM_MAGIC_V1, 2: SHIM_MAGIC_V2, 3: SHIM_MAGIC_V3}
MAGIC_VERSION = {m: v for v, m in VERSION_MAGIC.items()}
VERSION_CODEC = {1: "paper", 2: "bounded", 3: "bounded"}
CODEC_VERSION = {"paper": 1, "bounded": 3}       # what TX writes where a user names only the codec
RX_VERSIONS_DEFAULT = (3,)


def shim_bytes(version):
    """The shim's length in a wire version: 4 (versions 1, 2) or 8 (version 3)."""
    return SHIM_BYTES_V3 if version == 3 else SHIM_BYTES
