"""Reliability tests: a fault-injecting proxy, primary restarts, rotation, limits."""
