"""The migration ledger as data: pins and a pure plan (SPEC §6).

Each migration file is pinned here by id, name and SHA-256. ``plan`` compares the
files on disk, the pins and the rows of ``schema_version`` and either returns the
pending steps or the problems that must stop everything before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Migration:
    """A migration as the ledger knows it: released (a pin), found on disk, or applied.

    Attributes:
        id: int, strictly increasing.
        name: str, the file name without ``NNNN_`` and ``.sql``.
        sha256: str | None, hex digest of the file's bytes; None only for an applied row of a
            ledger that predates checksums (filled on the next verify).
    """

    id: int
    name: str
    sha256: str | None

    @property
    def stem(self) -> str:
        """The file name without ``.sql``: ``NNNN_name``."""
        return f"{self.id:04d}_{self.name}"


# The three roles of one record; the names say which list a value comes from.
Pin = Migration  # released and pinned here (sha256 always set)
FileOnDisk = Migration  # a file in migrations/
Applied = Migration  # a ``schema_version`` row


PINS: tuple[Pin, ...] = (
    Pin(1, "schema", "d2fbade928dd4d6b25c9bf51ad93a36cb4ac44527c94f4874addb9d1e8cb4eea"),
    Pin(2, "time_guards_and_rollup", "14b6ef2923a706db0fb83226464c6ab3fd5703ae837246d497c9abcaf62574c6"),
    Pin(3, "pricing_seed", "99c9500cccfef7288953b6030d1cc0dcce07e4a978b425f3eecdbd147d50e696"),
    Pin(4, "rollup_totals_index", "a4e7a4ac1ba9f4c9df85eb9b0eef3a478c2c30d7f1713ff25ef9fcab5b6cbfe1"),
    Pin(5, "sessions_status_index", "f12c4af58925a856e8b763fbb73c6ae1895ede2a0ee27e82ebe2ebfb41cdd4fd"),
    Pin(6, "token_usage_write_cost", "e53cceef715218b459539c29372abb563e820b266cb0579f7fe0be0b235f0586"),
    Pin(7, "agents_evidence_status", "41aec9bb4b19ae2a8f9d85d519d0bfd042f6c77fbf2d60d91bbce7f61d2ff80b"),
    Pin(8, "quarantine", "fbc509327a6aa52a5694bf3af476002c79681dd332f4794d97488757d623c2f5"),
    Pin(9, "agents_session_key", "d8e8f796231ef4fa2b5424117982150366aaf7ddb8073754914ee47378578626"),
    Pin(10, "session_titles", "8867a57913e28df75648f2fe549375cf78279603679eea6e9f32ef72e70d9a84"),
    Pin(11, "price_dimensions", "d79ebcf2e9ef46b27aa3ff09e9255826f5e66053afaa71299c4314958eb3fa0b"),
    Pin(12, "price_dimensions_seed", "2b780a30954d02c39336ddfc5012c346b6223789e4bef83747ff2507ae012069"),
    Pin(13, "payload_codecs", "225f216c1adf5b8b263f6a05a524cf16523994207d16e912b87e42d0b207cf4f"),
    Pin(15, "rollup_deferred", "b51453a57647876be909937511b236b1577ee1219946f329436844cda290c3d9"),
    Pin(16, "payload_blocks", "64dd12eb89be1e0e2e5a354355453ea3cfc99994c3f97c8024aa7db04de470df"),
    Pin(17, "drop_origin_index", "22ac2c356349f44a8dd96453bffece1315f176fb449d297369a2b985b3ed44f4"),
    Pin(18, "token_usage_time_trigger", "c440c2aa4911f98730e54f9e31587af69af91a328d1bdb09dc6dbaa1db8ef105"),
    Pin(19, "payload_open", "41ab67b3fa9f1e991e72cf00979d14fd546a9c2adea5f4b9276ee3e907a72961"),
    Pin(20, "agent_kinds", "f691700ab959cf34666e60155d14d90e29d20cec769674526c7896c5566480ec"),
    Pin(21, "rate_limit_samples", "fb39ed59a662a91f47ed17833ec299fb7eb4517b999eb4160afca87e7e31185e"),
    Pin(22, "search", "dc6fbb9f11bb51f20981724eb5a0180c639a1ae622a1f956b465c464ed777e25"),
    Pin(23, "hook_projections", "469d9ae9b9a910f1bcb374035a71e5f5f9d9c953ea7334a2b05bb24b08b13932"),
    Pin(24, "usage_columns", "7503acb39cdf066f4601f97658bbeb55d4b916d86240974a5ac5b640dae61d18"),
    Pin(25, "claude_code_totals", "214a0fbc16b7fc994a0f9307164e434c341eba5958ab28300a7357686a22ac31"),
    Pin(26, "otel", "a5bcdc950374e46e32df335a431d14702e60c033af60f8279bdd284b61892bd4"),
    Pin(27, "inference_geo", "8281427e2a957ce48ffa6a44fa52d1bf8b87c2daef2316402aae6543acce5c65"),
    Pin(28, "fork_evidence", "9bf63892916feb8c4c08ebc4e3a566ef9c3d0daf871dd105f3fcc850e6f94018"),
    Pin(29, "fork_edges", "a6f7d0e2c1473cafe315b88c57f0e47d1423abf6f3c471a9fbb819c9591e8bdc"),
    Pin(30, "interned_log", "1cb538f43cd9fda9098f17f12b6735116f0062c70c227ed01d5b543c7699909d"),
    Pin(31, "drop_prompt_index", "8cf437fac3f4773e13bed5bd48b5bcd0a698ca698056d0fda01c2d029d21391b"),
    Pin(32, "team_sessions", "1116550f2e1e65128244ea49dcdfe6ba96f5be700c55ab41b2f8be3a6408808e"),
    Pin(33, "compact_search_docs", "ea67d26198892e4694916f768cb9bb8bccd85a916f959d2e1214b640f17005cb"),
    Pin(34, "compact_tool_calls", "348db6197c1ab95366f4ac52d8111207fbf1e35c076943b90fb1eceb658ea995"),
)

# Migrations a database may lack while a later one is applied, because a build shipped the later
# one first: main's cfb4571, a7f2d4f and 1bfaf6f (2026-12-01, 06:22-06:43) had 0015 (rollup_deferred)
# and not yet 0013 (payload_codecs), so their databases hold 1-12 and 15 (without this every command
# would refuse them for good). 0013 adds a column and a table 0015 does not touch, and both come
# before everything after them, so 0013 is applied late, then the rest in order. The id never used
# (0014) stays unused: a migration filling the gap would be refused on every database past it.
LATE: dict[int, frozenset[int]] = {13: frozenset({15})}

# The central store's ledger (SPEC §13): PostgreSQL-dialect files in migrations/pg/, the same
# tamper rules (``plan`` with ``pins=PG_PINS``), recorded in the central database's own
# ``schema_version``.
PG_PINS: tuple[Pin, ...] = (
    Pin(1, "central", "7819dcb684feef6f3e5f6bbc70334ac4a5b6461f597678ecb94567766b7d4acc"),
    Pin(2, "pricing_seed", "fbcd383ba57522fa6a57939383a1e180ec523e56115a2ea60293d3f55cbdcced"),
    Pin(3, "price_dimensions_titles", "8114b21de21b1eab655fb8b0bead1c592426dcfc02fa996e2f1d00bb0daa25df"),
    Pin(4, "host_divergence", "36925dd4228e11920f3594914adf006da3780fc64c18bcafefe2a1870fd9637c"),
    Pin(5, "origin_hash_index", "c2d167886e4a3a3684eae07a3954368b7abc8cfdad7e949cc23804ba206caceb"),
    Pin(6, "shipped_digest", "210483b63421b80974b53fed8943e4ce1211e152b0f4b0c5810e521bff242201"),
    Pin(7, "agent_kinds", "1622046ce5e7a713c7b4320e62f829fb969b93c3f2ae0dc6ce050de66d79b76c"),
    Pin(8, "rate_limit_samples", "4e373c63c9b6307e8eb112ba6e6ba2da25d90801592219183e0e022ae06e6df7"),
    Pin(9, "hook_projections", "5162336416a50798083916c137bda048fc2384f0f0e9d4cbcae269b25248d0d6"),
    Pin(10, "usage_columns", "a93580fa404fd2cc8708b581f7ae083ee80c6748689e1a2fe7b29929c30f6a1f"),
    Pin(11, "claude_code_totals", "55f7fe2754cc8891b24b09d096238795c8db84c2f49b4540b84ae931574db763"),
    Pin(12, "otel", "cd405f39f75cdd718f03dc85e8ed4d6b3992d23e5d70c93777106d74da671abf"),
    Pin(13, "inference_geo", "b4594f330c7cdcc29ff37841706b3f5fdf5fb70c2b066e80bb8c664b0f573cba"),
    Pin(14, "fork_evidence", "29713527503a6d262f42c01da9714fe30be90b2f35fd54b9bd6a3947668cd6f9"),
    Pin(15, "fork_edges", "ffb4d0d27e8e66fddf999be1bff4556fb7cae8684e7ed262222af44788afd045"),
    Pin(16, "team_sessions", "544da6680cd1f415dc37712d5e4d2ded00373dfba33561fa54af678b0973d54f"),
)


@dataclass(frozen=True, slots=True)
class Plan:
    """What to do.

    Attributes:
        pending: pins to apply, in id order.
        fill_checksums: applied ids whose NULL checksum is to be filled (trust on first verify).
        problems: one message per refusal; when non-empty nothing may be applied.
    """

    pending: tuple[Pin, ...]
    fill_checksums: tuple[Pin, ...]
    problems: tuple[str, ...]


def _fix(pin: Pin) -> str:
    return f"restore migrations/{pin.stem}.sql to the released version and ship the change as a new migration"


def plan(files: list[FileOnDisk], applied: list[Applied], pins: tuple[Pin, ...] = PINS) -> Plan:
    """Decide what a migration run does. Pure.

    Args:
        files: the migration files found on disk.
        applied: the ledger rows.
        pins: the released migrations (``PINS``; with them, ``LATE``'s exceptions to the order:
            any other pending id below an applied one is refused).

    Returns:
        A ``Plan``; ``problems`` names every migration that does not match and says what to do.
    """
    late = LATE if pins is PINS else {}
    problems: list[str] = []
    ids = [p.id for p in pins]
    if ids != sorted(set(ids)):
        problems.append(f"migration ids must be strictly increasing: {ids}")
    by_id = {f.id: f for f in files}
    for f in files:
        if f.id not in {p.id for p in pins}:
            problems.append(
                f"migration {f.stem}.sql is not pinned in ingestd/core/ledger.py PINS: pin it with its sha256"
            )
    for pin in pins:
        found = by_id.get(pin.id)
        if found is None:
            problems.append(f"migration {pin.stem}.sql is missing: restore it")
        elif found.sha256 != pin.sha256 or found.name != pin.name:
            problems.append(f"migration {pin.stem}.sql was edited after release: {_fix(pin)}")
    pin_by_id = {p.id: p for p in pins}
    fill: list[Pin] = []
    for row in applied:
        pinned = pin_by_id.get(row.id)
        if pinned is None:
            problems.append(
                f"the database has migration {row.id} ({row.name}) that this ingestd does not know: upgrade ingestd"
            )
        elif row.sha256 is None:
            fill.append(pinned)
        elif row.sha256 != pinned.sha256:
            problems.append(
                f"applied migration {pinned.stem} has recorded checksum {row.sha256[:12]}…, "
                f"not the pinned {(pinned.sha256 or '')[:12]}…: {_fix(pinned)}"
            )
    done = {row.id for row in applied}
    pending = tuple(p for p in pins if p.id not in done)
    for p in pending:
        later = {d for d in done if d > p.id} - late.get(p.id, frozenset())
        if later:
            problems.append(
                f"migration {p.id} is pending but {max(later)} is applied: ids must be applied in increasing order"
            )
            break
    return Plan(pending=pending, fill_checksums=tuple(fill), problems=tuple(problems))
