"""golden.wire and hw.wire hold the same wire-format constants, name by name."""

import ast
from pathlib import Path

import inceptionn.golden.wire as golden_wire
import inceptionn.hw.wire as hw_wire


def test_every_hw_constant_is_in_golden_with_the_same_value():
    assert hw_wire.__all__, "hw.wire lists no constants"
    for name in hw_wire.__all__:
        assert hasattr(golden_wire, name), f"golden.wire lacks {name}"
        assert getattr(golden_wire, name) == getattr(hw_wire, name), name


def test_golden_does_not_import_the_gateware():
    root = Path(golden_wire.__file__).parent
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                mod = ("." * node.level) + (node.module or "")
                assert "hw" not in mod.split("."), f"{path.name} imports {mod}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert ".hw" not in alias.name and alias.name != "hw", path.name


def test_golden_reexports_keep_their_values():
    from inceptionn import golden
    assert golden.MAX_FRAME_BYTES == golden_wire.MAX_FRAME_BYTES
    assert golden.SHIM_MAGIC == golden_wire.SHIM_MAGIC
    assert golden.SHIM_BYTES == golden_wire.SHIM_BYTES
    assert golden.DSCP_DEFAULT == golden_wire.DSCP_DEFAULT
    assert (golden.K_MIN, golden.K_MAX, golden.K_DEFAULT) == (
        golden_wire.K_MIN, golden_wire.K_MAX, golden_wire.K_DEFAULT)
    assert golden.GROUP_VALUES == golden_wire.GROUP_VALUES
    assert golden.MAX_PAYLOAD == golden_wire.MAX_PAYLOAD


def test_wire_format_version_2_constants():
    """Version 2 (the bounded codec) has its own shim magic; version 1 keeps 0xC5."""
    assert golden_wire.SHIM_MAGIC == golden_wire.SHIM_MAGIC_V1 == 0xC5
    assert golden_wire.SHIM_MAGIC_V2 == 0xC6
    assert (golden_wire.EB_K_MIN, golden_wire.EB_K_MAX) == (1, 16)
    assert golden_wire.CODEC_MAGIC == {"paper": 0xC5, "bounded": 0xC6}
    assert golden_wire.MAGIC_CODEC == {0xC5: "paper", 0xC6: "bounded", 0xC7: "bounded"}
    assert golden_wire.CODEC_DEFAULT == "bounded" and golden_wire.CODECS == ("paper", "bounded")
    # Where the gateware defines the version-2 names, they agree (also checked name by
    # name above for everything hw.wire lists).
    for name in ("SHIM_MAGIC_V1", "SHIM_MAGIC_V2", "EB_K_MIN", "EB_K_MAX"):
        if hasattr(hw_wire, name):
            assert getattr(hw_wire, name) == getattr(golden_wire, name), name


def test_wire_format_version_3_constants():
    """Version 3: magic 0xC7, an 8-byte shim, the bounded codec; TX writes it for the
    bounded codec and RX accepts it alone unless told otherwise."""
    assert golden_wire.SHIM_MAGIC_V3 == 0xC7 and golden_wire.SHIM_BYTES_V3 == 8
    assert golden_wire.VERSION_MAGIC == {1: 0xC5, 2: 0xC6, 3: 0xC7}
    assert golden_wire.VERSION_CODEC == {1: "paper", 2: "bounded", 3: "bounded"}
    assert golden_wire.CODEC_VERSION == {"paper": 1, "bounded": 3}
    assert golden_wire.RX_VERSIONS_DEFAULT == (3,)
    assert [golden_wire.shim_bytes(v) for v in (1, 2, 3)] == [4, 4, 8]
