"""Benchmarks: workloads on a private primary, and the peers measured against them."""
