"""Tests here run on the small seeded database of ``tests.seeded``."""

from tests.seeded import db_path

__all__ = ["db_path"]
