"""The advice-quality benchmark (run benchmarks/advice_quality.py); see docs/benchmark.md."""
