"""swerl benchmarks: `python -m benchmarks [name ...]` runs benchmarks/bench_<name>.py main() for each name."""
