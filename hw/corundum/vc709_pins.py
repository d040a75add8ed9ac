"""The VC709's pins for Corundum's board top (vc709_board.py): one table, as data.

Board: Xilinx VC709 Connectivity Kit, XC7VX690T-2FFG1761C. References are to the board
user guide UG887 (VC709 Evaluation Board for the Virtex-7 FPGA), by section and
function; the GTH lanes of the SFP+ cages and of PCIe are also given as
the transceiver they sit on. The top keeps the port names of Corundum's NetFPGA SUME
top (same FPGA), so that SUME's core (fpga_core.v) serves unchanged; what the VC709
lacks or has differently is said in the reference column.

The four SFP+ cages (P2..P5) are on GTH quad 113 with their reference clock from the
Si5324 jitter attenuator (U24) into MGTREFCLK0 of the same quad; cage n is
Corundum's ``sfp_<n+1>``. PCIe Gen3 x8 is on quads 114/115 with the edge connector's
100 MHz reference on MGTREFCLK1 of quad 115, the same lanes as on the SUME (the same
device's PCIe block X0Y1). Pins that the project's own VC709 platform
(hw/platform/vc709.py) also uses agree with it. Not checked on a physical board.
"""

from dataclasses import dataclass

__all__ = ["Pin", "PORTS", "PINS", "PART", "SUME_PART", "BOARD_DEVICE_ID"]

PART = "xc7vx690tffg1761-2"
SUME_PART = "xc7vx690tffg1761-3"
BOARD_DEVICE_ID = 0x7038     # Corundum's board id is vendor:device; 0x10ee:0x7038 here


@dataclass(frozen=True)
class Pin:
    port: str                   # top-level port, "name" or "name[i]"
    loc: str                    # package pin
    iostandard: str = ""        # "" for transceiver pins (the GT owns them)
    extra: str = ""             # further XDC properties ("PULLUP true", "SLEW SLOW DRIVE 12")
    ref: str = ""               # UG887 section and net name


# Ports of the board top: name -> (direction, width). Corundum's SUME top's, less `led`
# (the VC709 has eight user LEDs: the SFP LEDs take them) and with the Si5324 reset
# named for its polarity on this board (SI5324_RST_B, active low).
PORTS = {
    "clk_200mhz_p": ("input", 1), "clk_200mhz_n": ("input", 1),
    "btn": ("input", 2),
    "sfp_1_led": ("output", 2), "sfp_2_led": ("output", 2),
    "sfp_3_led": ("output", 2), "sfp_4_led": ("output", 2),
    "i2c_scl": ("inout", 1), "i2c_sda": ("inout", 1), "i2c_mux_reset": ("output", 1),
    "pcie_rx_p": ("input", 8), "pcie_rx_n": ("input", 8),
    "pcie_tx_p": ("output", 8), "pcie_tx_n": ("output", 8),
    "pcie_mgt_refclk_p": ("input", 1), "pcie_mgt_refclk_n": ("input", 1),
    "pcie_reset_n": ("input", 1),
    **{f"sfp_{n}_{s}": (d, 1) for n in range(1, 5)
       for s, d in (("rx_p", "input"), ("rx_n", "input"), ("tx_p", "output"),
                    ("tx_n", "output"))},
    "sfp_mgt_refclk_p": ("input", 1), "sfp_mgt_refclk_n": ("input", 1),
    "si5324_rst_n": ("output", 1),
    **{f"sfp_{n}_mod_detect": ("input", 1) for n in range(1, 5)},
    **{f"sfp_{n}_rs": ("output", 2) for n in range(1, 5)},
    **{f"sfp_{n}_los": ("input", 1) for n in range(1, 5)},
    **{f"sfp_{n}_tx_disable": ("output", 1) for n in range(1, 5)},
    **{f"sfp_{n}_tx_fault": ("input", 1) for n in range(1, 5)},
}

_IO18 = "LVCMOS18"
_OUT = "SLEW SLOW DRIVE 12"
_IN = "PULLUP true"


def _sfp(n, tx_p, tx_n, rx_p, rx_n, gt, cage, mod_abs, rs0, rs1, los, tx_dis, tx_fault):
    c = f"SFP+ connectors, cage {cage}:"
    return [
        Pin(f"sfp_{n}_tx_p", tx_p, ref=f"{c} TX data, MGTHTXP{gt}"),
        Pin(f"sfp_{n}_tx_n", tx_n, ref=f"{c} TX data, MGTHTXN{gt}"),
        Pin(f"sfp_{n}_rx_p", rx_p, ref=f"{c} RX data, MGTHRXP{gt}"),
        Pin(f"sfp_{n}_rx_n", rx_n, ref=f"{c} RX data, MGTHRXN{gt}"),
        Pin(f"sfp_{n}_mod_detect", mod_abs, _IO18, _IN, f"{c} module detect"),
        Pin(f"sfp_{n}_rs[0]", rs0, _IO18, _OUT, f"{c} rate select 0"),
        Pin(f"sfp_{n}_rs[1]", rs1, _IO18, _OUT, f"{c} rate select 1"),
        Pin(f"sfp_{n}_los", los, _IO18, _IN, f"{c} loss of signal"),
        Pin(f"sfp_{n}_tx_disable", tx_dis, _IO18, _OUT, f"{c} TX disable"),
        Pin(f"sfp_{n}_tx_fault", tx_fault, _IO18, _IN, f"{c} TX fault"),
    ]


def _pcie(lane, rx_p, rx_n, tx_p, tx_n, gt):
    return [
        Pin(f"pcie_rx_p[{lane}]", rx_p, ref=f"PCIe edge connector, lane {lane}: RX, MGTHRXP{gt}"),
        Pin(f"pcie_rx_n[{lane}]", rx_n, ref=f"PCIe edge connector, lane {lane}: RX, MGTHRXN{gt}"),
        Pin(f"pcie_tx_p[{lane}]", tx_p, ref=f"PCIe edge connector, lane {lane}: TX, MGTHTXP{gt}"),
        Pin(f"pcie_tx_n[{lane}]", tx_n, ref=f"PCIe edge connector, lane {lane}: TX, MGTHTXN{gt}"),
    ]


_LEDS = [("AM39", "DS2"), ("AN39", "DS3"), ("AR37", "DS4"), ("AT37", "DS5"),
         ("AR35", "DS6"), ("AP41", "DS7"), ("AP42", "DS8"), ("AU39", "DS9")]

PINS = [
    # UG887 "System Clock Source": 200 MHz SiT9102 (U51) on SYSCLK_P/N, bank 38 (1.5 V,
    # shared with DDR3): a differential SSTL input, not LVDS as on the SUME.
    Pin("clk_200mhz_p", "H19", "DIFF_SSTL15", "", "System clock: SYSCLK_P (U51)"),
    Pin("clk_200mhz_n", "G18", "DIFF_SSTL15", "", "System clock: SYSCLK_N (U51)"),
    # UG887 "User Pushbuttons": the SUME's two buttons on the centre and north ones.
    Pin("btn[0]", "AV39", _IO18, "", "User pushbuttons: GPIO_SW_C (SW6)"),
    Pin("btn[1]", "AR40", _IO18, "", "User pushbuttons: GPIO_SW_N (SW3)"),
    # UG887 "User LEDs": GPIO_LED_0_LS..7_LS; two per SFP+ port, as the SUME's port LEDs.
    *[Pin(f"sfp_{i // 2 + 1}_led[{i % 2}]", loc, _IO18, _OUT,
          f"User LEDs: GPIO_LED_{i}_LS ({ds})") for i, (loc, ds) in enumerate(_LEDS)],
    # UG887 "I2C Bus Switch": a PCA9548 at 0x74; its reset is active low.
    Pin("i2c_scl", "AT35", _IO18, "SLEW SLOW DRIVE 8", "I2C bus: SCL"),
    Pin("i2c_sda", "AU32", _IO18, "SLEW SLOW DRIVE 8", "I2C bus: SDA"),
    Pin("i2c_mux_reset", "AY42", _IO18, "SLEW SLOW DRIVE 8", "I2C bus switch: reset, active low"),
    # UG887 "PCI Express Endpoint Connectivity": x8 on quads 114/115, PERST# from the slot.
    *_pcie(0, "Y4", "Y3", "W2", "W1", "3_115"),
    *_pcie(1, "AA6", "AA5", "AA2", "AA1", "2_115"),
    *_pcie(2, "AB4", "AB3", "AC2", "AC1", "1_115"),
    *_pcie(3, "AC6", "AC5", "AE2", "AE1", "0_115"),
    *_pcie(4, "AD4", "AD3", "AG2", "AG1", "3_114"),
    *_pcie(5, "AE6", "AE5", "AH4", "AH3", "2_114"),
    *_pcie(6, "AF4", "AF3", "AJ2", "AJ1", "1_114"),
    *_pcie(7, "AG6", "AG5", "AK4", "AK3", "0_114"),
    Pin("pcie_mgt_refclk_p", "AB8", ref="PCIe edge connector: 100 MHz reference, MGTREFCLK1P_115"),
    Pin("pcie_mgt_refclk_n", "AB7", ref="PCIe edge connector: 100 MHz reference, MGTREFCLK1N_115"),
    Pin("pcie_reset_n", "AV35", _IO18, _IN, "PCIe edge connector: PERST#, active low"),
    # UG887 "SFP/SFP+ Connectors" (P2..P5) and "Jitter Attenuated Clock" (Si5324, U24).
    # Lane order as the board is laid out (cages P2/P3 sit on lanes 2/3 of the quad).
    *_sfp(1, "AN2", "AN1", "AM8", "AM7", "2_113", "P2", "AA42", "AB38", "AB39", "AA40",
          "Y42", "AA39"),
    *_sfp(2, "AP4", "AP3", "AN6", "AN5", "3_113", "P3", "AB42", "W40", "Y40", "Y39",
          "AB41", "Y38"),
    *_sfp(3, "AM4", "AM3", "AL6", "AL5", "1_113", "P4", "AC39", "AD42", "AE42", "AD38",
          "AC38", "AA41"),
    *_sfp(4, "AL2", "AL1", "AJ6", "AJ5", "0_113", "P5", "AC41", "AE39", "AE40", "AD40",
          "AC40", "AE38"),
    Pin("sfp_mgt_refclk_p", "AH8", ref="Jitter attenuated clock (Si5324, U24): output, MGTREFCLK0P_113"),
    Pin("sfp_mgt_refclk_n", "AH7", ref="Jitter attenuated clock (Si5324, U24): output, MGTREFCLK0N_113"),
    Pin("si5324_rst_n", "AT36", _IO18, _OUT, "Jitter attenuated clock (Si5324, U24): reset, active low"),
]
