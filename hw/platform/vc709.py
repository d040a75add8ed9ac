"""Xilinx VC709 Connectivity Kit (Virtex-7 XC7VX690T-2FFG1761C), as an Amaranth platform.

Pin locations and I/O standards follow the board user guide UG887 (VC709 Evaluation
Board for the Virtex-7 FPGA, "FPGA pin assignments" tables and the board's master XDC)
by signal name (SYSCLK_P/N, CPU_RESET, GPIO_LED_n_LS, GPIO_DIP_SWn, GPIO_SW_x). Each
location and standard below was cross-checked against several independent, published
VC709 designs' constraint files, which agree with each other and with this file. The
user I/O (LEDs, DIP switches, push buttons, CPU reset) sit in 1.8 V banks, hence
LVCMOS18. Not checked on a physical board: the self-test only uses the system clock,
CPU_RESET, the LEDs and DIP switch 0.
"""

from amaranth.build import Attrs, Clock, DiffPairs, Pins, Resource
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
        # UG887 "System Clock": fixed 200 MHz oscillator (SiT9102) on SYSCLK_P/N, pins
        # H19/G18 (IO_L13P/N_T2_MRCC_38). Bank 38 is a 1.5 V HP bank (it serves the
        # DDR3 SODIMM), so the input is DIFF_SSTL15, as in the board's designs: an
        # LVDS standard would conflict with the bank's VCCO in Vivado's I/O checks.
        Resource("clk200", 0, DiffPairs("H19", "G18", dir="i"), Clock(200e6),
                 Attrs(IOSTANDARD="DIFF_SSTL15")),

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
        # quad 113, AH8/AH7, as in the connectivity TRD's XDC (UG962) and the published
        # VC709 10GBASE-R designs (SFP+ cages P2..P5 on GTHE2 X1Y13, X1Y12, X1Y14, X1Y15).
        # Before use the Si5324 must be programmed over I2C to give 156.25 MHz; the
        # transceiver pins themselves are owned by the 10G PHY IP.
        Resource("sfp_refclk", 0, DiffPairs("AH8", "AH7", dir="i"), Clock(156.25e6)),
    ]
    connectors = []

    def toolchain_prepare(self, fragment, name, **kwargs):
        overrides = {
            # As in Xilinx's VC709 example designs: a compressed bitstream, and the
            # configuration bank at 1.8 V (CFGBVS = GND, CONFIG_VOLTAGE 1.8).
            "script_before_bitstream":
                "set_property BITSTREAM.GENERAL.COMPRESS TRUE [current_design]",
            "add_constraints":
                "set_property CFGBVS GND [current_design]\n"
                "set_property CONFIG_VOLTAGE 1.8 [current_design]",
        }
        return super().toolchain_prepare(fragment, name, **{**overrides, **kwargs})
