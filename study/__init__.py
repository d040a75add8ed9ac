"""The five papers side by side: INCEPTIONN and its companions on one harness
(`make study` regenerates docs/results.md). Experiments, apart from the product."""
