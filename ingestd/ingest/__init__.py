"""Transcript discovery, tail reading, backfill and rebuilding projections from the log."""
