"""The five papers side by side: INCEPTIONN and its four companions on one simulated
data-parallel harness, apart from the product. `make study` (`python -m inceptionn.study`)
regenerates docs/results.md and docs/results/*.png; `inceptionn.study.results.reduced()` is the
short version the test suite checks."""

# This folder is inceptionn.study (pyproject's package-dir). Imported under another name
# (`import study` from the checkout's root) its modules would load twice, as other objects.
if __name__ != "inceptionn.study":
    raise ImportError(f"{__name__}: import it as inceptionn.study", name=__name__)

