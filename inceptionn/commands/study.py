"""`inceptionn study`: the five papers' study (the study/ folder of a source checkout,
not installed with the package): every experiment, docs/results.md and its figures."""

import importlib

from .args import CliError


def _study():
    try:
        return importlib.import_module("study.command")
    except ModuleNotFoundError as e:
        raise CliError("the study runs from a source checkout (its study/ folder is not "
                       f"installed): run it from the repository's root ({e})") from None


def add_arguments(ap) -> None:
    _study().add_arguments(ap)


def run(args) -> int:
    return _study().run(args)
