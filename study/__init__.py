"""The five papers side by side: INCEPTIONN and its four companions on one simulated
data-parallel harness, apart from the product. `make study` (`python -m study`)
regenerates docs/results.md and docs/results/*.png; `study.results.reduced()` is the
short version the test suite checks."""
