"""The words that mark a quarantined record whose usage is counted in no bucket (pure, no imports):
``ingestd.core.validate`` ends such a row's detail with them, and the reports
(``ingestd.report.usage.uncounted_usage``) find the rows by them without importing the fold."""

from __future__ import annotations

USAGE_NOT_COUNTED = ", its usage not counted until a dated record joins it"
