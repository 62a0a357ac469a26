"""The daemon's shell: writer thread, tailer, watchdog, single-instance lock.

``__all__`` names the modules other packages may import; the rest are this package's own (tests and
bench may import any).
"""

__all__ = [
    "bind",
    "checks",
    "config",
    "identitylock",
    "lock",
    "main",
    "presence",
]
