"""The engines' Verilog as hw/verilog/ ships it (inceptionn/rtl/shipped.py): current for
these sources, read by builds where its key matches and ignored where it does not."""

import json

import pytest

from inceptionn.rtl import harness, shipped


def test_the_shipped_verilog_is_current():
    stale = shipped.stale()
    assert not stale, (f"hw/verilog/ was converted from other sources than these for "
                       f"{', '.join(stale)}: run `make shipped-verilog` and commit hw/verilog/")


def _small_block():
    """(name, factory) of the registry's smallest block, the AXI-stream register slice:
    converted in about a second, keyed as the engines are."""
    from inceptionn.commands import verilog
    return next((n, f) for n, f in verilog.blocks() if n == "axis_register_slice")


def test_a_build_reads_the_shipped_text_only_under_its_key(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "SHIPPED", tmp_path)
    name, factory = _small_block()
    key = harness._design_key(factory, name)
    (tmp_path / f"{name}.v").write_text("// the shipped text\n")
    (tmp_path / "keys.json").write_text(json.dumps({name: key}))
    assert harness.to_verilog(factory, name) == "// the shipped text\n"
    # Another key (the sources changed since): converted as if nothing were shipped.
    (tmp_path / "keys.json").write_text(json.dumps({name: "0" * 64}))
    text = harness.to_verilog(factory, name)
    assert f"module {name}" in text and "the shipped text" not in text
    (tmp_path / "keys.json").write_text("not json")
    assert harness.to_verilog(factory, name) == text


def test_a_stale_or_missing_file_is_reported(tmp_path):
    assert shipped.stale(tmp_path) == [name for name, _ in shipped.shipped_designs()]
    keys = json.loads((shipped.SHIPPED / "keys.json").read_text())
    (tmp_path / "keys.json").write_text(json.dumps(keys))
    name = shipped.shipped_designs()[0][0]
    (tmp_path / f"{name}.v").write_text("x")
    assert name not in shipped.stale(tmp_path)      # the key says current (the text: below)


@pytest.mark.long
def test_the_shipped_verilog_is_what_the_sources_convert_to():
    """A fresh conversion of each engine, byte for byte (the key alone cannot see a file
    edited by hand)."""
    for name, factory in shipped.shipped_designs():
        assert (shipped.SHIPPED / f"{name}.v").read_text() == \
            harness.convert_uncached(factory, name), f"hw/verilog/{name}.v"


def test_the_key_follows_the_hdl_not_other_simulators_testbenches(tmp_path, monkeypatch):
    name, factory = _small_block()
    for part in ("tx", "corundum/tb"):
        (tmp_path / part).mkdir(parents=True)
    (tmp_path / "tx" / "stage.py").write_text("A = 1\n")
    (tmp_path / "corundum" / "tb" / "test_rates.py").write_text("N = 48\n")
    monkeypatch.setattr(harness, "HW", tmp_path)
    key = harness._design_key(factory, name)
    (tmp_path / "corundum" / "tb" / "test_rates.py").write_text("N = 24\n")
    assert harness._design_key(factory, name) == key
    (tmp_path / "tx" / "stage.py").write_text("A = 2\n")
    assert harness._design_key(factory, name) != key
