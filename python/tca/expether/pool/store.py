"""The pool manager's state in SQLite: inventory, tokens, hot-plug events, bridge reports and
the audit log.

One database file per manager. WAL journal, so that readers never wait for the writer;
``synchronous=NORMAL``, so that a committed change survives a crash of the process (not
necessarily a power loss). Every change runs in one ``BEGIN IMMEDIATE`` transaction. The schema
itself keeps a device in at most one group: a device row has one VLAN column, and
``UNIQUE(vlan, slot)`` with ``slot`` in 0..31 gives every host at most 32 devices
(seed 002 Table 3.1) whatever the code above does.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from tca.expether.pool.rules import MAX_DEVICES_PER_HOST, MAX_VLAN

SCHEMA_VERSION = 1

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS hosts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    vlan INTEGER NOT NULL UNIQUE CHECK (vlan BETWEEN 0 AND {MAX_VLAN}),
    mac TEXT NOT NULL UNIQUE,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS devices (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    mac TEXT NOT NULL UNIQUE,
    vlan INTEGER REFERENCES hosts (vlan),
    slot INTEGER CHECK (slot BETWEEN 0 AND {MAX_DEVICES_PER_HOST - 1}),
    created TEXT NOT NULL,
    CHECK ((vlan IS NULL) = (slot IS NULL)),
    UNIQUE (vlan, slot)
);
CREATE TABLE IF NOT EXISTS tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    hash TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('admin', 'host', 'bridge')),
    vlan INTEGER,
    created TEXT NOT NULL,
    CHECK ((role = 'host') = (vlan IS NOT NULL))
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    vlan INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('hot-plug', 'hot-remove')),
    slot INTEGER NOT NULL,
    device TEXT NOT NULL,
    audit INTEGER
);
CREATE INDEX IF NOT EXISTS events_by_vlan ON events (vlan, id);
CREATE TABLE IF NOT EXISTS reports (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    bridge TEXT NOT NULL,
    sender TEXT NOT NULL,
    counters TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS reports_by_bridge ON reports (bridge, id);
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    who TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    detail TEXT NOT NULL,
    result TEXT NOT NULL CHECK (result IN ('ok', 'refused')),
    status INTEGER NOT NULL,
    message TEXT NOT NULL
);
"""

# Reports kept per bridge: enough history to see a trend, bounded whatever the reporting period.
REPORTS_KEPT = 100


def now() -> str:
    """UTC time as ISO 8601 with microseconds: sorts as text."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds")


def token_hash(token: str) -> str:
    """Tokens are stored hashed: a copy of the database does not give away the secrets."""
    return hashlib.sha256(token.encode()).hexdigest()


class Store:
    """One SQLite database; a connection per thread."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        self._local = threading.local()
        db = self.connection()
        mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode != "wal":
            raise sqlite3.OperationalError(f"{self.path}: cannot use a WAL journal (journal mode {mode})")
        db.executescript(SCHEMA)  # idempotent: every statement says IF NOT EXISTS
        with self.write() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None:
                db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            elif row[0] != str(SCHEMA_VERSION):
                raise sqlite3.DatabaseError(
                    f"{self.path}: schema version {row[0]}, expected {SCHEMA_VERSION}"
                )

    def connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, isolation_level=None, timeout=10.0)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA foreign_keys=ON")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: committed when the block ends, rolled back if it raises."""
        db = self.connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    @contextlib.contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: one consistent snapshot for several queries."""
        db = self.connection()
        db.execute("BEGIN")
        try:
            yield db
        finally:
            db.execute("COMMIT")


# ---- queries; each takes a connection inside a transaction ----


def hosts(db: sqlite3.Connection, vlan: int | None = None) -> list[dict]:
    sql = "SELECT id, name, vlan, mac, created FROM hosts"
    rows = (
        db.execute(sql + " ORDER BY vlan") if vlan is None else db.execute(sql + " WHERE vlan = ?", (vlan,))
    )
    out = [dict(r) for r in rows]
    counts = dict(
        db.execute("SELECT vlan, COUNT(*) FROM devices WHERE vlan IS NOT NULL GROUP BY vlan").fetchall()
    )
    for h in out:
        h["devices"] = counts.get(h["vlan"], 0)
    return out


def devices(db: sqlite3.Connection, vlan: int | None = None) -> list[dict]:
    sql = "SELECT id, name, kind, mac, vlan, slot, created FROM devices"
    if vlan is None:
        rows = db.execute(sql + " ORDER BY id")
    else:
        rows = db.execute(sql + " WHERE vlan = ? ORDER BY slot", (vlan,))
    return [dict(r) for r in rows]


# SQLite's INTEGER is 64-bit signed: a larger number names no row (and cannot be bound).
LARGEST_ID = 2**63 - 1


def _number(text: str) -> int | None:
    """``text`` as a number a row can hold, or None (no such row)."""
    n = int(text)
    return n if n <= LARGEST_ID else None


def host_by(db: sqlite3.Connection, ref: str) -> dict | None:
    """A host by id, name, VLAN id ("vlan:N") or bridge MAC."""
    if ref.startswith("vlan:") and ref[5:].isdigit():
        if (vlan := _number(ref[5:])) is None:
            return None
        row = db.execute("SELECT * FROM hosts WHERE vlan = ?", (vlan,)).fetchone()
    elif ref.isdigit():
        if (id_ := _number(ref)) is None:
            return None
        row = db.execute("SELECT * FROM hosts WHERE id = ?", (id_,)).fetchone()
    else:
        row = db.execute("SELECT * FROM hosts WHERE name = ? OR mac = ?", (ref, ref.lower())).fetchone()
    return dict(row) if row else None


def device_by(db: sqlite3.Connection, ref: str) -> dict | None:
    """A device by id, name or bridge MAC."""
    if ref.isdigit():
        if (id_ := _number(ref)) is None:
            return None
        row = db.execute("SELECT * FROM devices WHERE id = ?", (id_,)).fetchone()
    else:
        row = db.execute("SELECT * FROM devices WHERE name = ? OR mac = ?", (ref, ref.lower())).fetchone()
    return dict(row) if row else None


def bridge_known(db: sqlite3.Connection, mac: str) -> str | None:
    """Which inventory entry has this bridge MAC: "host NAME", "device NAME" or None."""
    row = db.execute("SELECT name FROM hosts WHERE mac = ?", (mac,)).fetchone()
    if row:
        return f"host {row[0]}"
    row = db.execute("SELECT name FROM devices WHERE mac = ?", (mac,)).fetchone()
    return f"device {row[0]}" if row else None


def add_event(
    db: sqlite3.Connection, kind: str, vlan: int, slot: int, device: str, audit: int | None
) -> None:
    db.execute(
        "INSERT INTO events (at, vlan, kind, slot, device, audit) VALUES (?, ?, ?, ?, ?, ?)",
        (now(), vlan, kind, slot, device, audit),
    )


def events(db: sqlite3.Connection, vlan: int | None, since: int, limit: int) -> list[dict]:
    sql = "SELECT id, at, vlan, kind, slot, device, audit FROM events WHERE id > ?"
    args: tuple = (since,)
    if vlan is not None:
        sql += " AND vlan = ?"
        args += (vlan,)
    return [dict(r) for r in db.execute(sql + " ORDER BY id LIMIT ?", args + (limit,))]


# The longest target, detail or message an audit entry keeps (characters).
AUDIT_TEXT = 256


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 3] + "..."


def add_audit(
    db: sqlite3.Connection,
    who: str,
    action: str,
    target: str,
    detail: dict,
    status: int = 200,
    message: str = "",
) -> int:
    result = "ok" if status < 400 else "refused"
    # A refused change may carry whatever a caller sent: the entry keeps the start of it.
    details = json.dumps(detail, sort_keys=True)
    if len(details) > AUDIT_TEXT:
        details = json.dumps({"cut": _cut(details, AUDIT_TEXT)})
    cur = db.execute(
        "INSERT INTO audit (at, who, action, target, detail, result, status, message)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (now(), who, action, _cut(target, AUDIT_TEXT), details, result, status, _cut(message, AUDIT_TEXT)),
    )
    return int(cur.lastrowid)


def audit(db: sqlite3.Connection, since: int, limit: int) -> list[dict]:
    rows = db.execute("SELECT * FROM audit WHERE id > ? ORDER BY id LIMIT ?", (since, limit))
    out = []
    for r in rows:
        entry = dict(r)
        entry["detail"] = json.loads(entry["detail"])
        out.append(entry)
    return out


def add_report(db: sqlite3.Connection, bridge: str, sender: str, counters: dict) -> dict:
    at = now()
    cur = db.execute(
        "INSERT INTO reports (at, bridge, sender, counters) VALUES (?, ?, ?, ?)",
        (at, bridge, sender, json.dumps(counters, sort_keys=True)),
    )
    db.execute(
        "DELETE FROM reports WHERE bridge = ? AND id <= ?",
        (bridge, int(cur.lastrowid) - REPORTS_KEPT),
    )
    return {"id": int(cur.lastrowid), "at": at, "bridge": bridge, "sender": sender, "counters": counters}


def reports(db: sqlite3.Connection, bridges: list[str] | None, history: str | None) -> list[dict]:
    """The latest report of each bridge (of ``bridges`` if given), or every kept report of the
    bridge ``history``, oldest first."""
    if history is not None:
        rows = db.execute("SELECT * FROM reports WHERE bridge = ? ORDER BY id", (history,))
    else:
        rows = db.execute(
            "SELECT * FROM reports WHERE id IN (SELECT MAX(id) FROM reports GROUP BY bridge) ORDER BY bridge"
        )
    out = []
    for r in rows:
        if bridges is not None and r["bridge"] not in bridges:
            continue
        entry = dict(r)
        entry["counters"] = json.loads(entry["counters"])
        out.append(entry)
    return out
