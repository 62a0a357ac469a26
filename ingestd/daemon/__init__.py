"""The daemon's shell: writer thread, tailer, watchdog, single-instance lock."""
