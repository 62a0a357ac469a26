"""The ingestd benchmark harness (``make bench`` / ``make bench-quick``; SPEC §11).

Plain Python: ``time.perf_counter`` for wall time, ``os.wait4`` / ``resource`` for CPU and peak RSS of
the measured subprocesses, several runs reported as median and range. It writes ``BENCHMARKS.md``.
A measurement whose command does not exist yet is reported as "not available yet", never faked.
"""
