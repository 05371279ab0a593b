"""The audit log: who, what, when and the result of every change and every refused attempt,
in the order the changes took effect; secrets never in it."""

from __future__ import annotations

import datetime
import json

import pytest
from pool_helpers import mac, populate, serving


@pytest.fixture
def pool(tmp_path):
    yield from serving(tmp_path)


def test_audit_entries(pool):
    c = pool.client()
    start = datetime.datetime.now(datetime.UTC)
    populate(c, [10, 20], 2)
    c.call("POST", "/api/devices/d0/assign", {"vlan": 10})
    c.call("POST", "/api/devices/d0/assign", {"vlan": 20})
    c.call("POST", "/api/devices/d0/assign", {"vlan": 20})  # no change: still audited
    assert c.request("POST", "/api/devices/d1/assign", {"vlan": 30})[0] == 404
    secret = c.call("POST", "/api/tokens", {"name": "h10", "role": "host", "vlan": 10})["token"]
    assert pool.client(secret).request("POST", "/api/devices/d1/assign", {"vlan": 10})[0] == 403
    c.call("POST", "/api/devices/d0/unassign")
    c.call("DELETE", "/api/devices/d1")
    end = datetime.datetime.now(datetime.UTC)

    audit = c.call("GET", "/api/audit")
    rows = [(a["who"], a["action"], a["target"], a["result"], a["status"]) for a in audit]
    assert rows == [
        ("server", "set-admin-token", "admin", "ok", 200),
        ("admin:admin", "create-host", "h10", "ok", 200),
        ("admin:admin", "create-host", "h20", "ok", 200),
        ("admin:admin", "create-device", "d0", "ok", 200),
        ("admin:admin", "create-device", "d1", "ok", 200),
        ("admin:admin", "assign", "d0", "ok", 200),
        ("admin:admin", "assign", "d0", "ok", 200),
        ("admin:admin", "assign", "d0", "ok", 200),
        ("admin:admin", "assign", "d1", "refused", 404),
        ("admin:admin", "create-token", "h10", "ok", 200),
        ("host:h10", "assign", "d1", "refused", 403),
        ("admin:admin", "unassign", "d0", "ok", 200),
        ("admin:admin", "delete-device", "d1", "ok", 200),
    ]
    details = [a["detail"] for a in audit if a["action"] in ("assign", "unassign") and a["result"] == "ok"]
    assert details == [
        {"vlan": 10, "device": "d0", "from": None, "to": 10, "slot": 0, "changed": True},
        {"vlan": 20, "device": "d0", "from": 10, "to": 20, "slot": 0, "changed": True},
        {"vlan": 20, "device": "d0", "from": 20, "to": 20, "slot": 0, "changed": False},
        {"device": "d0", "from": 20, "to": None, "slot": None, "changed": True},
    ]
    assert audit[8]["message"] == "no host on VLAN 30"
    assert audit[10]["message"] == "host token h10 may not assign: admin only"
    ids = [a["id"] for a in audit]
    assert ids == sorted(ids)
    times = [datetime.datetime.fromisoformat(a["at"]) for a in audit[1:]]
    assert times == sorted(times) and start <= times[0] and times[-1] <= end
    assert secret not in json.dumps(audit)
    # Each event names the audit entry of the change that caused it.
    moves = {a["id"] for a in audit if a["action"] in ("assign", "unassign") and a["result"] == "ok"}
    events = c.call("GET", "/api/events")
    assert len(events) == 4 and {e["audit"] for e in events} <= moves
    # Paging.
    assert c.call("GET", "/api/audit?since=5&limit=2") == audit[5:7]
    assert c.call("GET", "/api/reports") == []
    c.call("POST", "/api/reports", {"bridge": mac(2, 0), "counters": {"tlps": 1}})
    assert len(c.call("GET", "/api/audit")) == len(audit)  # reports are monitoring, not changes
