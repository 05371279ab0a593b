"""The pool manager's operations: who may do what, the checks, and one transaction per change
that carries the change to the backend, records the hosts' hot-plug events and writes the
audit log.

Roles (a token has one):
- ``admin``: everything: inventory, assignment, tokens, the audit log.
- ``host``: reads its own group only (its host, the devices assigned to it, their events and
  reports); changes nothing.
- ``bridge``: sends bridge reports (monitoring, seed 002 §3.3.1); reads nothing.

Every change, and every refused attempt at one, gets an audit entry: who, what, when, result.
Writes are serialized by one lock and one ``BEGIN IMMEDIATE`` transaction, so the audit ids
are in the order the changes took effect. Bridge reports are monitoring data, not changes,
and are not audited.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass

from tca.expether.pool import rules, store
from tca.expether.pool.backend import Backend, BackendError
from tca.expether.pool.rules import MAX_DEVICES_PER_HOST, MAX_HOSTS, PoolError

ROLES = ("admin", "host", "bridge")


@dataclass(frozen=True)
class Caller:
    """An authenticated token: its name, role and, for a host token, the host's VLAN id."""

    name: str
    role: str
    vlan: int | None = None

    @property
    def who(self) -> str:
        return f"{self.role}:{self.name}"


class Manager:
    def __init__(self, db: store.Store, backend: Backend):
        self.store = db
        self.backend = backend
        self.lock = threading.Lock()
        self._touched = False  # whether the change under way has reached the backend
        self._restore()

    def _restore(self) -> None:
        with self.store.read() as db:
            self.backend.restore(store.hosts(db), store.devices(db))

    # ---- tokens ----

    def authenticate(self, token: str) -> Caller | None:
        with self.store.read() as db:
            row = db.execute(
                "SELECT name, role, vlan FROM tokens WHERE hash = ?", (store.token_hash(token),)
            ).fetchone()
        return Caller(row["name"], row["role"], row["vlan"]) if row else None

    def ensure_admin_token(self, token: str, name: str = "admin") -> None:
        """Makes ``token`` an admin token called ``name`` (``serve --admin-token``)."""
        if len(token) < 16:
            raise PoolError(400, "an admin token needs at least 16 characters")
        with self.lock, self.store.write() as db:
            digest = store.token_hash(token)
            row = db.execute("SELECT name, role FROM tokens WHERE hash = ?", (digest,)).fetchone()
            if row is not None:
                if row["role"] != "admin":
                    raise PoolError(409, f"that token is already the {row['role']} token {row['name']}")
                return
            db.execute("DELETE FROM tokens WHERE name = ?", (name,))
            db.execute(
                "INSERT INTO tokens (name, hash, role, vlan, created) VALUES (?, ?, 'admin', NULL, ?)",
                (name, digest, store.now()),
            )
            store.add_audit(db, "server", "set-admin-token", name, {})

    def has_admin_token(self) -> bool:
        with self.store.read() as db:
            return db.execute("SELECT 1 FROM tokens WHERE role = 'admin'").fetchone() is not None

    # ---- changes ----

    def refused(self, who: str, action: str, target: str, detail: dict, error: PoolError) -> None:
        """Records a refused change in the audit log."""
        with self.store.write() as db:
            store.add_audit(db, who, action, target, detail, error.status, error.message)

    def require_admin(self, caller: Caller, action: str, target: str) -> None:
        """Refuses (403, audited) a change by a token that is not an admin's."""
        if caller.role != "admin":
            e = PoolError(403, f"{caller.role} token {caller.name} may not {action}: admin only")
            self.refused(caller.who, action, target, {}, e)
            raise e

    def _change(
        self, caller: Caller, action: str, target: str, detail: dict, fn: Callable[..., dict]
    ) -> dict:
        """Runs ``fn(db, audit_id)`` as one change by an admin: in one transaction with its audit
        entry, or not at all, with a refused entry instead."""
        with self.lock:
            self._touched = False
            try:
                if caller.role != "admin":
                    raise PoolError(403, f"{caller.role} token {caller.name} may not {action}: admin only")
                with self.store.write() as db:
                    audit_id = store.add_audit(db, caller.who, action, target, detail)
                    result = fn(db, audit_id)
                    # The entry names what was changed by name, whichever reference the caller used.
                    full = dict(detail, **result.pop("audit", {}))
                    named = str(result.get("name", target))
                    if full != detail or named != target:
                        db.execute(
                            "UPDATE audit SET detail = ?, target = ? WHERE id = ?",
                            (_json(full), named, audit_id),
                        )
                    result["audit"] = audit_id
                    return result
            except PoolError as e:
                if self._touched:
                    self._restore()
                self.refused(caller.who, action, target, detail, e)
                raise
            except BaseException:
                if self._touched:
                    self._restore()
                raise

    def _backend(self, method: str, *args):
        self._touched = True
        try:
            return getattr(self.backend, method)(*args)
        except BackendError as e:
            raise PoolError(409, str(e)) from None

    def create_host(self, caller: Caller, name: object, vlan: object, mac: object) -> dict:
        target = str(name)
        detail = {"name": name, "vlan": vlan, "mac": mac}

        def fn(db, _audit):
            n, v, m = rules.name(name), rules.vlan(vlan), rules.mac(mac)
            count = db.execute("SELECT COUNT(*) FROM hosts").fetchone()[0]
            if count >= MAX_HOSTS:
                raise PoolError(409, f"the pool has {count} hosts: at most {MAX_HOSTS} (seed 002 Table 3.1)")
            if db.execute("SELECT 1 FROM hosts WHERE name = ?", (n,)).fetchone():
                raise PoolError(409, f"a host named {n} exists")
            other = db.execute("SELECT name FROM hosts WHERE vlan = ?", (v,)).fetchone()
            if other:
                raise PoolError(409, f"VLAN {v} belongs to host {other[0]}")
            owner = store.bridge_known(db, m)
            if owner:
                raise PoolError(409, f"bridge {m} is already {owner}")
            self._backend("join_host", m, v)
            cur = db.execute(
                "INSERT INTO hosts (name, vlan, mac, created) VALUES (?, ?, ?, ?)", (n, v, m, store.now())
            )
            return {"id": int(cur.lastrowid), "name": n, "vlan": v, "mac": m}

        return self._change(caller, "create-host", target, detail, fn)

    def delete_host(self, caller: Caller, ref: str) -> dict:
        def fn(db, _audit):
            host = _host(db, ref)
            n = db.execute("SELECT COUNT(*) FROM devices WHERE vlan = ?", (host["vlan"],)).fetchone()[0]
            if n:
                raise PoolError(409, f"host {host['name']} has {n} device(s) assigned: unassign them first")
            self._backend("leave_host", host["vlan"])
            revoked = db.execute(
                "DELETE FROM tokens WHERE role = 'host' AND vlan = ?", (host["vlan"],)
            ).rowcount
            db.execute("DELETE FROM hosts WHERE id = ?", (host["id"],))
            return {"name": host["name"], "vlan": host["vlan"], "audit": {"tokens_revoked": revoked}}

        return self._change(caller, "delete-host", ref, {}, fn)

    def create_device(self, caller: Caller, name: object, kind: object, mac: object) -> dict:
        detail = {"name": name, "kind": kind, "mac": mac}

        def fn(db, _audit):
            n, k, m = rules.name(name), rules.kind(kind), rules.mac(mac)
            if db.execute("SELECT 1 FROM devices WHERE name = ?", (n,)).fetchone():
                raise PoolError(409, f"a device named {n} exists")
            owner = store.bridge_known(db, m)
            if owner:
                raise PoolError(409, f"bridge {m} is already {owner}")
            self._backend("join_device", m)
            cur = db.execute(
                "INSERT INTO devices (name, kind, mac, vlan, slot, created) VALUES (?, ?, ?, NULL, NULL, ?)",
                (n, k, m, store.now()),
            )
            return {"id": int(cur.lastrowid), "name": n, "kind": k, "mac": m, "vlan": None, "slot": None}

        return self._change(caller, "create-device", str(name), detail, fn)

    def delete_device(self, caller: Caller, ref: str) -> dict:
        def fn(db, _audit):
            dev = _device(db, ref)
            if dev["vlan"] is not None:
                raise PoolError(
                    409, f"device {dev['name']} is assigned to VLAN {dev['vlan']}: unassign it first"
                )
            self._backend("leave_device", dev["mac"])
            db.execute("DELETE FROM devices WHERE id = ?", (dev["id"],))
            return {"name": dev["name"]}

        return self._change(caller, "delete-device", ref, {}, fn)

    def assign(self, caller: Caller, ref: str, vlan: object) -> dict:
        """Moves a device to the host on ``vlan`` (from the pool or from another host)."""

        def fn(db, audit_id):
            v = rules.vlan(vlan)
            dev = _device(db, ref)
            host = db.execute("SELECT name FROM hosts WHERE vlan = ?", (v,)).fetchone()
            if host is None:
                raise PoolError(404, f"no host on VLAN {v}")
            was = dev["vlan"]
            if was == v:
                return _assigned(dev, v, dev["slot"], [], changed=False, was=v)
            n = db.execute("SELECT COUNT(*) FROM devices WHERE vlan = ?", (v,)).fetchone()[0]
            if n >= MAX_DEVICES_PER_HOST:
                raise PoolError(
                    409,
                    f"host {host[0]} (VLAN {v}) has {n} devices: at most {MAX_DEVICES_PER_HOST} per host"
                    " (5-bit PCIe device number, seed 002 Table 3.1)",
                )
            slot, events = self._backend("assign", dev["mac"], v)
            db.execute("UPDATE devices SET vlan = ?, slot = ? WHERE id = ?", (v, slot, dev["id"]))
            for e in events:
                store.add_event(db, e.kind, e.vlan, e.slot, e.device, audit_id)
            return _assigned(dev, v, slot, events, changed=True, was=was)

        return self._change(caller, "assign", ref, {"vlan": vlan}, fn)

    def unassign(self, caller: Caller, ref: str) -> dict:
        """Returns a device to the pool."""

        def fn(db, audit_id):
            dev = _device(db, ref)
            if dev["vlan"] is None:
                return _assigned(dev, None, None, [], changed=False)
            events = self._backend("release", dev["mac"])
            db.execute("UPDATE devices SET vlan = NULL, slot = NULL WHERE id = ?", (dev["id"],))
            for e in events:
                store.add_event(db, e.kind, e.vlan, e.slot, e.device, audit_id)
            return _assigned(dev, None, None, events, changed=True, was=dev["vlan"])

        return self._change(caller, "unassign", ref, {}, fn)

    def create_token(self, caller: Caller, name: object, role: object, vlan: object = None) -> dict:
        detail = {"name": name, "role": role, "vlan": vlan}

        def fn(db, _audit):
            n = rules.name(name, "token name")
            if role not in ROLES:
                raise PoolError(400, f"role {rules.shown(role)}: expected one of {', '.join(ROLES)}")
            v = None
            if role == "host":
                v = rules.vlan(vlan)
                if db.execute("SELECT 1 FROM hosts WHERE vlan = ?", (v,)).fetchone() is None:
                    raise PoolError(404, f"no host on VLAN {v}")
            elif vlan is not None:
                raise PoolError(400, f"a {role} token has no VLAN")
            if db.execute("SELECT 1 FROM tokens WHERE name = ?", (n,)).fetchone():
                raise PoolError(409, f"a token named {n} exists")
            secret = secrets.token_urlsafe(32)
            db.execute(
                "INSERT INTO tokens (name, hash, role, vlan, created) VALUES (?, ?, ?, ?, ?)",
                (n, store.token_hash(secret), role, v, store.now()),
            )
            return {"name": n, "role": role, "vlan": v, "token": secret}

        return self._change(caller, "create-token", str(name), detail, fn)

    def revoke_token(self, caller: Caller, name: str) -> dict:
        def fn(db, _audit):
            row = db.execute("SELECT role FROM tokens WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise PoolError(404, f"no token named {name}")
            if row["role"] == "admin":
                admins = db.execute("SELECT COUNT(*) FROM tokens WHERE role = 'admin'").fetchone()[0]
                if admins == 1:
                    raise PoolError(409, "the last admin token cannot be revoked")
            db.execute("DELETE FROM tokens WHERE name = ?", (name,))
            return {"name": name}

        return self._change(caller, "revoke-token", name, {}, fn)

    def report(self, caller: Caller, bridge: object, counters: object) -> dict:
        """A bridge's periodic report (seed 002 §3.3.1): counters, stored; the latest is shown."""
        if caller.role not in ("admin", "bridge"):
            raise PoolError(403, f"{caller.role} token {caller.name} may not send bridge reports")
        m, c = rules.mac(bridge), rules.counters(counters)
        with self.store.write() as db:
            if store.bridge_known(db, m) is None:
                raise PoolError(404, f"no host or device bridge {m} in the inventory")
            return store.add_report(db, m, caller.who, c)

    # ---- reads, each limited to what the caller may see ----

    def _group(self, caller: Caller) -> int | None:
        """None for an admin (everything); the VLAN id for a host token."""
        if caller.role == "admin":
            return None
        if caller.role == "host":
            return caller.vlan
        raise PoolError(403, f"bridge token {caller.name} may only send reports")

    def hosts(self, caller: Caller) -> list[dict]:
        vlan = self._group(caller)
        with self.store.read() as db:
            return store.hosts(db, vlan)

    def devices(self, caller: Caller) -> list[dict]:
        vlan = self._group(caller)
        with self.store.read() as db:
            return store.devices(db, vlan)

    def status(self, caller: Caller) -> dict:
        vlan = self._group(caller)
        with self.store.read() as db:
            hosts, devices = store.hosts(db, vlan), store.devices(db, vlan)
            pool = db.execute("SELECT COUNT(*) FROM devices WHERE vlan IS NULL").fetchone()[0]
        groups = [
            {
                "vlan": h["vlan"],
                "host": h["name"],
                "devices": [
                    {"name": d["name"], "slot": d["slot"]} for d in devices if d["vlan"] == h["vlan"]
                ],
            }
            for h in hosts
        ]
        out = {
            "backend": self.backend.name,
            "limits": {"hosts": MAX_HOSTS, "devices_per_host": MAX_DEVICES_PER_HOST},
            "role": caller.role,
            "hosts": len(hosts),
            "devices": len(devices),
            "assigned": sum(d["vlan"] is not None for d in devices),
            "groups": groups,
        }
        if vlan is None:
            out["in_pool"] = pool
        return out

    def events(self, caller: Caller, vlan: int | None, since: int, limit: int) -> list[dict]:
        own = self._group(caller)
        if own is not None:
            if vlan is not None and vlan != own:
                raise PoolError(403, f"host token {caller.name} sees the events of VLAN {own} only")
            vlan = own
        with self.store.read() as db:
            return store.events(db, vlan, since, limit)

    def reports(self, caller: Caller, bridge: str | None) -> list[dict]:
        own = self._group(caller)
        with self.store.read() as db:
            visible = None
            if own is not None:
                visible = [h["mac"] for h in store.hosts(db, own)] + [
                    d["mac"] for d in store.devices(db, own)
                ]
            if bridge is not None:
                m = rules.mac(bridge)
                if visible is not None and m not in visible:
                    raise PoolError(403, f"host token {caller.name} sees the bridges of VLAN {own} only")
                return store.reports(db, None, m)
            return store.reports(db, visible, None)

    def audit(self, caller: Caller, since: int, limit: int) -> list[dict]:
        if caller.role != "admin":
            raise PoolError(403, f"{caller.role} token {caller.name} may not read the audit log: admin only")
        with self.store.read() as db:
            return store.audit(db, since, limit)

    def tokens(self, caller: Caller) -> list[dict]:
        if caller.role != "admin":
            raise PoolError(403, f"{caller.role} token {caller.name} may not list tokens: admin only")
        with self.store.read() as db:
            return [dict(r) for r in db.execute("SELECT name, role, vlan, created FROM tokens ORDER BY id")]


def _host(db, ref: str) -> dict:
    host = store.host_by(db, ref)
    if host is None:
        raise PoolError(404, f"no host {ref}")
    return host


def _device(db, ref: str) -> dict:
    dev = store.device_by(db, ref)
    if dev is None:
        raise PoolError(404, f"no device {ref}")
    return dev


def _assigned(dev: dict, vlan, slot, events, changed: bool, was=None) -> dict:
    return {
        "id": dev["id"],
        "name": dev["name"],
        "mac": dev["mac"],
        "vlan": vlan,
        "slot": slot,
        "changed": changed,
        "events": [dataclasses.asdict(e) for e in events],
        "audit": {"device": dev["name"], "from": was, "to": vlan, "slot": slot, "changed": changed},
    }


def _json(value: dict) -> str:
    return json.dumps(value, sort_keys=True)
