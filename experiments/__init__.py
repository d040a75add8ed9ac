"""Experiments: designs built and measured, not part of the engines or the package."""
