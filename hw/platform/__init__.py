"""Board platforms (Amaranth build system) for the engines and the board self-test."""

from .vc709 import VC709Platform

__all__ = ["VC709Platform"]
