"""Benchmarks: not part of the default test run. `make bench` runs them all.

Each benchmark is a module `bench_<topic>.py` here with a `main() -> None` that measures our code
against a reference or peer in the same run and writes `results/<topic>.md` (what the README
quotes) and `results/<topic>.json` (the raw numbers).
"""
