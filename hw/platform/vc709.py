"""Xilinx VC709 Connectivity Kit (Virtex-7 XC7VX690T-2FFG1761C), as an Amaranth platform.

Pin locations and I/O standards follow the board user guide UG887 (VC709 Evaluation
Board for the Virtex-7 FPGA, "FPGA pin assignments" tables and the board's master XDC).
The user I/O (LEDs, DIP switches, push buttons, CPU reset) sit in 1.8 V banks, hence
LVCMOS18. Every entry was checked against what we know of UG887; the few we are not
certain of are marked "verify" and kept out of the self-test (only the system clock,
CPU_RESET, the LEDs and DIP switch 0 are used there).
"""

from amaranth.build import Attrs, Clock, DiffPairs, Pins, Resource, Subsignal
from amaranth.vendor import XilinxPlatform

__all__ = ["VC709Platform"]


def _leds(pins):
    return [Resource("led", i, Pins(p, dir="o"), Attrs(IOSTANDARD="LVCMOS18"))
            for i, p in enumerate(pins.split())]


def _switches(pins):
    return [Resource("dip_switch", i, Pins(p, dir="i"), Attrs(IOSTANDARD="LVCMOS18"))
            for i, p in enumerate(pins.split())]


class VC709Platform(XilinxPlatform):
    device = "xc7vx690t"
    package = "ffg1761"
    speed = "2"
    default_clk = "clk200"
    default_rst = "cpu_reset"

    resources = [
        # UG887 "System Clock": fixed 200 MHz LVDS oscillator (SiT9102) on SYSCLK_P/N,
        # pins H19/G18 (bank 38). LVDS input without DIFF_TERM matches the board's
        # external termination; an LVDS *input* is allowed whatever the bank's VCCO.
        Resource("clk200", 0, DiffPairs("H19", "G18", dir="i"), Clock(200e6),
                 Attrs(IOSTANDARD="LVDS")),

        # UG887 "User Pushbuttons": CPU_RESET (SW8), active high, AV40.
        Resource("cpu_reset", 0, Pins("AV40", dir="i"), Attrs(IOSTANDARD="LVCMOS18")),

        # UG887 "User LEDs": GPIO_LED_0_LS .. GPIO_LED_7_LS, active high (driven through
        # level shifters, hence the _LS suffix), DS2..DS9.
        *_leds("AM39 AN39 AR37 AT37 AR35 AP41 AP42 AU39"),

        # UG887 "GPIO DIP switch" SW2: GPIO_DIP_SW0 .. GPIO_DIP_SW7, on = 1.
        *_switches("AV30 AY33 BA31 BA32 AW30 AY30 BA30 BB31"),

        # UG887 "User Pushbuttons": GPIO_SW_N/E/S/W/C, active high.
        Resource("button_n", 0, Pins("AR40", dir="i"), Attrs(IOSTANDARD="LVCMOS18")),
        Resource("button_e", 0, Pins("AU38", dir="i"), Attrs(IOSTANDARD="LVCMOS18")),
        Resource("button_s", 0, Pins("AP40", dir="i"), Attrs(IOSTANDARD="LVCMOS18")),
        Resource("button_w", 0, Pins("AW40", dir="i"), Attrs(IOSTANDARD="LVCMOS18")),
        Resource("button_c", 0, Pins("AV39", dir="i"), Attrs(IOSTANDARD="LVCMOS18")),

        # For the 10G path (later): the SFP+ cages' GTH reference clock. On the VC709 it
        # comes from the Si5324 jitter attenuator (SI5324_OUT_C_P/N) into MGTREFCLK0 of
        # quad 113, AH8/AH7, as in the connectivity TRD's XDC (UG962). Verify against
        # UG887 before use: the Si5324 must first be programmed over I2C to give
        # 156.25 MHz, and the transceiver pins themselves are owned by the 10G PHY IP.
        Resource("sfp_refclk", 0, DiffPairs("AH8", "AH7", dir="i"), Clock(156.25e6)),
    ]
    connectors = []

    def toolchain_prepare(self, fragment, name, **kwargs):
        overrides = {
            # As in Xilinx's VC709 example designs: a compressed bitstream, and the
            # configuration bank at 1.8 V (CFGBVS = GND; verify against UG887).
            "script_before_bitstream":
                "set_property BITSTREAM.GENERAL.COMPRESS TRUE [current_design]",
            "add_constraints":
                "set_property CFGBVS GND [current_design]\n"
                "set_property CONFIG_VOLTAGE 1.8 [current_design]",
        }
        return super().toolchain_prepare(fragment, name, **{**overrides, **kwargs})
