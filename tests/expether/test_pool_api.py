"""The pool manager's REST API against a running server: authentication and roles, the limits
of seed 002 Table 3.1, hot-plug events, bridge reports, and a clear 4xx for every bad request."""

from __future__ import annotations

import http.client
import json

import pytest
from pool_helpers import ADMIN, PoolServer, mac, populate, serving
from tca.expether.pool.backend import SimBackend
from tca.expether.pool.manager import Caller, Manager
from tca.expether.pool.store import Store


@pytest.fixture
def pool(tmp_path):
    yield from serving(tmp_path)


def token(c, name: str, role: str, vlan: int | None = None) -> str:
    body = {"name": name, "role": role} | ({"vlan": vlan} if vlan is not None else {})
    return c.call("POST", "/api/tokens", body)["token"]


def test_roles_admin_host_bridge_and_none(pool):
    c = pool.client()
    populate(c, [10, 20], 3)
    c.call("POST", "/api/devices/d0/assign", {"vlan": 10})
    c.call("POST", "/api/devices/d1/assign", {"vlan": 20})
    host10 = pool.client(token(c, "host10", "host", 10))
    bridge = pool.client(token(c, "bridge1", "bridge"))

    # No token, a malformed header, an unknown token: 401 with a JSON error.
    anonymous = pool.client(None)
    status, answer = anonymous.request("GET", "/api/devices")
    assert status == 401 and "missing token" in answer["error"]
    assert anonymous.request("GET", "/api/devices", token="x")[0] == 401
    status, answer = anonymous.request("POST", "/api/devices/d2/assign", {"vlan": 10}, token="wrong-token")
    assert (status, answer["error"]) == (401, "unknown or revoked token")

    # The admin sees everything; a host token its own group only.
    assert [d["name"] for d in c.call("GET", "/api/devices")] == ["d0", "d1", "d2"]
    assert [d["name"] for d in host10.call("GET", "/api/devices")] == ["d0"]
    assert [h["vlan"] for h in host10.call("GET", "/api/hosts")] == [10]
    st = host10.call("GET", "/api/status")
    assert (st["role"], st["devices"], [g["vlan"] for g in st["groups"]]) == ("host", 1, [10])
    assert {e["vlan"] for e in host10.call("GET", "/api/events")} == {10}
    assert host10.request("GET", "/api/events?vlan=20")[0] == 403
    assert host10.call("GET", "/api/whoami") == {"name": "host10", "role": "host", "vlan": 10}

    # A host token cannot reassign, even its own device, nor read the audit log or send reports.
    for method, path, body in [
        ("POST", "/api/devices/d0/unassign", None),
        ("POST", "/api/devices/d2/assign", {"vlan": 10}),
        ("POST", "/api/hosts", {"name": "x", "vlan": 30, "mac": mac(1, 30)}),
        ("DELETE", "/api/devices/d2", None),
        ("POST", "/api/tokens", {"name": "mine", "role": "admin"}),
        ("GET", "/api/audit", None),
        ("GET", "/api/tokens", None),
        ("POST", "/api/reports", {"bridge": mac(2, 0), "counters": {"frames": 1}}),
    ]:
        status, answer = host10.request(method, path, body)
        assert status == 403 and "host token host10" in answer["error"], (path, answer)
    assert c.call("GET", "/api/devices")[2]["vlan"] is None  # nothing changed

    # A bridge token sends reports and reads nothing.
    assert bridge.call("POST", "/api/reports", {"bridge": mac(2, 0), "counters": {"frames": 7}})[
        "sender"
    ] == ("bridge:bridge1")
    assert bridge.request("GET", "/api/devices")[0] == 403
    assert bridge.request("POST", "/api/devices/d2/assign", {"vlan": 10})[0] == 403

    # Revoked tokens stop working; removing a host revokes its tokens.
    c.call("DELETE", "/api/tokens/bridge1")
    assert bridge.request("GET", "/api/whoami")[0] == 401
    c.call("POST", "/api/devices/d0/unassign")
    c.call("DELETE", "/api/hosts/h10")
    assert host10.request("GET", "/api/devices")[0] == 401

    # Refused changes are in the audit log with who tried and why.
    refused = [
        (a["who"], a["action"], a["status"]) for a in c.call("GET", "/api/audit") if a["result"] == "refused"
    ]
    assert ("unauthenticated", "assign", 401) in refused
    assert ("host:host10", "unassign", 403) in refused
    assert ("host:host10", "assign", 403) in refused
    assert ("bridge:bridge1", "assign", 403) in refused


def test_at_most_32_devices_per_host(pool):
    c = pool.client()
    populate(c, [7], 34)
    slots = [c.call("POST", f"/api/devices/d{i}/assign", {"vlan": 7})["slot"] for i in range(32)]
    assert slots == list(range(32))
    status, answer = c.request("POST", "/api/devices/d32/assign", {"vlan": 7})
    assert status == 409
    assert answer["error"] == (
        "host h7 (VLAN 7) has 32 devices: at most 32 per host (5-bit PCIe device number, seed 002 Table 3.1)"
    )
    assert c.call("GET", "/api/devices")[32]["vlan"] is None
    # A freed port is reused: the lowest free slot.
    c.call("POST", "/api/devices/d5/unassign")
    assert c.call("POST", "/api/devices/d33/assign", {"vlan": 7})["slot"] == 5
    events = c.call("GET", "/api/events?vlan=7&limit=1000")
    assert [e["kind"] for e in events] == ["hot-plug"] * 32 + ["hot-remove", "hot-plug"]
    assert c.call("GET", "/api/hosts")[0]["devices"] == 32


def test_at_most_4096_hosts(tmp_path):
    # 4096 hosts through the manager in-process (faster than 4096 requests), then the server.
    db = tmp_path / "pool.db"
    m = Manager(Store(db), SimBackend())
    admin = Caller("admin", "admin")
    for v in range(4096):
        m.create_host(admin, f"h{v}", v, mac(1, v))
    server = PoolServer(db).start()
    try:
        c = server.client()
        status, answer = c.request("POST", "/api/hosts", {"name": "one-more", "vlan": 5, "mac": mac(1, 9999)})
        assert (status, answer["error"]) == (
            409,
            "the pool has 4096 hosts: at most 4096 (seed 002 Table 3.1)",
        )
        status, answer = c.request(
            "POST", "/api/hosts", {"name": "one-more", "vlan": 4096, "mac": mac(1, 9999)}
        )
        assert status == 400 and "outside 0..4095" in answer["error"]
        # The restored switch holds every host: the last VLAN takes a device.
        c.call("POST", "/api/devices", {"name": "ssd", "kind": "ssd", "mac": mac(2, 1)})
        assert c.call("POST", "/api/devices/ssd/assign", {"vlan": 4095})["slot"] == 0
        assert c.call("GET", "/api/status")["hosts"] == 4096
    finally:
        server.stop()


def test_every_bad_request_is_a_clear_4xx(pool):
    c = pool.client()
    populate(c, [10], 2)
    c.call("POST", "/api/devices/d0/assign", {"vlan": 10})
    cases = [
        ("POST", "/api/devices/d1/assign", "{bad", 400, "not valid JSON"),
        ("POST", "/api/devices/d1/assign", "[1]", 400, "must be a JSON object"),
        ("POST", "/api/devices/d1/assign", "", 400, "must be a JSON object"),
        ("POST", "/api/devices/d1/assign", {}, 400, "missing field 'vlan'"),
        ("POST", "/api/devices/d1/assign", {"vlan": 10, "x": 1}, 400, "unknown field 'x'"),
        ("POST", "/api/devices/d1/assign", {"vlan": "10"}, 400, "expected an integer"),
        ("POST", "/api/devices/d1/assign", {"vlan": True}, 400, "expected an integer"),
        ("POST", "/api/devices/d1/assign", {"vlan": 4096}, 400, "outside 0..4095"),
        ("POST", "/api/devices/d1/assign", {"vlan": -1}, 400, "outside 0..4095"),
        ("POST", "/api/devices/d1/assign", {"vlan": 11}, 404, "no host on VLAN 11"),
        ("POST", "/api/devices/nope/assign", {"vlan": 10}, 404, "no device nope"),
        ("POST", "/api/devices/99/unassign", None, 404, "no device 99"),
        (
            "POST",
            "/api/hosts",
            {"name": "h2", "vlan": 10, "mac": mac(1, 2)},
            409,
            "VLAN 10 belongs to host h10",
        ),
        ("POST", "/api/hosts", {"name": "h10", "vlan": 11, "mac": mac(1, 2)}, 409, "a host named h10 exists"),
        ("POST", "/api/hosts", {"name": "h2", "vlan": 11, "mac": mac(2, 0)}, 409, "is already device d0"),
        ("POST", "/api/hosts", {"name": "h2", "vlan": 11, "mac": "03:00:00:00:00:01"}, 400, "unicast"),
        ("POST", "/api/hosts", {"name": "h2", "vlan": 11, "mac": "02:00:00:00:01"}, 400, "six hex bytes"),
        ("POST", "/api/hosts", {"name": "2h", "vlan": 11, "mac": mac(1, 2)}, 400, "expected a letter"),
        ("POST", "/api/hosts", {"name": "h2", "vlan": 11}, 400, "missing field 'mac'"),
        ("POST", "/api/devices", {"name": "d9", "kind": "SSD!", "mac": mac(2, 9)}, 400, "kind 'SSD!'"),
        (
            "POST",
            "/api/devices",
            {"name": "d1", "kind": "ssd", "mac": mac(2, 9)},
            409,
            "a device named d1 exists",
        ),
        ("DELETE", "/api/hosts/h10", None, 409, "unassign them first"),
        ("DELETE", "/api/hosts/nope", None, 404, "no host nope"),
        ("DELETE", "/api/devices/d0", None, 409, "unassign it first"),
        ("POST", "/api/reports", {"bridge": mac(2, 0), "counters": {}}, 400, "non-empty object"),
        ("POST", "/api/reports", {"bridge": mac(2, 0), "counters": {"x": -1}}, 400, "non-negative"),
        ("POST", "/api/reports", {"bridge": mac(2, 0), "counters": {"x": "1"}}, 400, "is not a number"),
        ("POST", "/api/reports", {"bridge": mac(2, 0), "counters": {"Bad Name": 1}}, 400, "counter name"),
        (
            "POST",
            "/api/reports",
            {"bridge": mac(2, 77), "counters": {"x": 1}},
            404,
            "no host or device bridge",
        ),
        ("POST", "/api/tokens", {"name": "t", "role": "root"}, 400, "role 'root'"),
        ("POST", "/api/tokens", {"name": "t", "role": "host", "vlan": 12}, 404, "no host on VLAN 12"),
        ("POST", "/api/tokens", {"name": "t", "role": "bridge", "vlan": 10}, 400, "has no VLAN"),
        ("POST", "/api/tokens", {"name": "admin", "role": "bridge"}, 409, "a token named admin exists"),
        ("DELETE", "/api/tokens/admin", None, 409, "the last admin token"),
        ("DELETE", "/api/tokens/nope", None, 404, "no token named nope"),
        ("GET", "/api/events?limit=0", None, 400, "limit"),
        ("GET", "/api/events?since=abc", None, 400, "since"),
        ("GET", "/api/events?vlan=5000", None, 400, "vlan"),
        ("GET", "/api/nothing", None, 404, "no such endpoint"),
        ("PUT", "/api/hosts", None, 405, "method not allowed"),
        ("POST", "/api/hosts", {"name": "a" * 70000}, 413, "over 65536 bytes"),
        ("POST", "/api/devices/d0/unassign", {"x": 1}, 400, "unknown field 'x'"),
        # Numbers past SQLite's 64-bit INTEGER: 4xx, not 500.
        ("GET", f"/api/events?since={10**25}", None, 400, "since"),
        ("GET", f"/api/audit?since={10**25}", None, 400, "since"),
        ("DELETE", f"/api/hosts/{10**25}", None, 404, "no host"),
        ("DELETE", "/api/hosts/vlan:" + "9" * 25, None, 404, "no host"),
        ("DELETE", f"/api/devices/{10**25}", None, 404, "no device"),
        ("POST", f"/api/devices/{10**25}/assign", {"vlan": 10}, 404, "no device"),
    ]
    for method, path, body, status, text in cases:
        raw = body if isinstance(body, str) else (None if body is None else json.dumps(body))
        conn = http.client.HTTPConnection(c.host, c.port, timeout=10)
        conn.request(method, path, body=raw, headers={"Authorization": f"Bearer {ADMIN}"})
        response = conn.getresponse()
        answer = json.loads(response.read())
        conn.close()
        assert response.status == status, (method, path, body, answer)
        assert list(answer) == ["error"] and text in answer["error"], (path, answer)
        assert "\n" not in answer["error"]
    # None of them changed anything.
    assert [(d["name"], d["vlan"]) for d in c.call("GET", "/api/devices")] == [("d0", 10), ("d1", None)]


def test_a_chunked_body_over_the_limit_is_refused_and_refusals_keep_a_short_record(pool):
    c = pool.client()
    conn = http.client.HTTPConnection(c.host, c.port, timeout=10)
    body = json.dumps({"name": "a" * 70000, "vlan": 10, "mac": mac(1, 0)}).encode()
    # No Content-Length: the body comes in chunks.
    conn.request(
        "POST",
        "/api/hosts",
        body=iter([body[:40000], body[40000:]]),
        encode_chunked=True,
        headers={"Authorization": f"Bearer {ADMIN}", "Transfer-Encoding": "chunked"},
    )
    response = conn.getresponse()
    assert response.status == 413, response.read()
    conn.close()
    long_name = "b" * 60000
    status, answer = c.request("POST", "/api/hosts", {"name": long_name, "vlan": 10, "mac": mac(1, 0)})
    assert status == 400 and len(answer["error"]) < 200, "the message quotes the start of the name only"
    entry = c.call("GET", "/api/audit")[-1]
    assert entry["result"] == "refused" and len(json.dumps(entry)) < 1500, len(json.dumps(entry))


def test_moves_give_hot_remove_then_hot_plug(pool):
    c = pool.client()
    populate(c, [10, 20], 2)
    c.call("POST", "/api/devices/d0/assign", {"vlan": 10})
    c.call("POST", "/api/devices/d1/assign", {"vlan": 10})
    moved = c.call("POST", f"/api/devices/{mac(2, 0)}/assign", {"vlan": 20})  # by MAC
    assert (moved["vlan"], moved["slot"], moved["changed"]) == (20, 0, True)
    assert [(e["kind"], e["vlan"], e["slot"]) for e in moved["events"]] == [
        ("hot-remove", 10, 0),
        ("hot-plug", 20, 0),
    ]
    again = c.call("POST", "/api/devices/1/assign", {"vlan": 20})  # by id: already there
    assert (again["changed"], again["events"]) == (False, [])
    assert [d["slot"] for d in c.call("GET", "/api/devices")] == [0, 1]
    events = c.call("GET", "/api/events")
    assert [(e["vlan"], e["kind"]) for e in events[-2:]] == [(10, "hot-remove"), (20, "hot-plug")]
    assert events[-1]["audit"] == events[-2]["audit"] == moved["audit"]
    assert c.call("GET", "/api/events?since=3") == events[3:]


def test_bridge_reports_latest_and_history(pool):
    c = pool.client()
    populate(c, [10, 20], 2)
    c.call("POST", "/api/devices/d0/assign", {"vlan": 10})
    for n in range(105):
        c.call("POST", "/api/reports", {"bridge": mac(2, 0), "counters": {"tlps": n, "rate_gbps": 9.5}})
    c.call("POST", "/api/reports", {"bridge": mac(2, 1), "counters": {"tlps": 3}})
    c.call("POST", "/api/reports", {"bridge": mac(1, 10), "counters": {"frames": 1}})
    latest = c.call("GET", "/api/reports")
    assert [(r["bridge"], r["counters"]) for r in latest] == [
        (mac(1, 10), {"frames": 1}),
        (mac(2, 0), {"rate_gbps": 9.5, "tlps": 104}),
        (mac(2, 1), {"tlps": 3}),
    ]
    history = c.call("GET", f"/api/reports?bridge={mac(2, 0)}")
    assert [r["counters"]["tlps"] for r in history] == list(range(5, 105))  # the last 100 kept
    host = pool.client(token(c, "host10", "host", 10))
    assert [r["bridge"] for r in host.call("GET", "/api/reports")] == [mac(1, 10), mac(2, 0)]
    assert host.request("GET", f"/api/reports?bridge={mac(2, 1)}")[0] == 403


def test_the_page_is_served(pool):
    c = pool.client()
    conn = http.client.HTTPConnection(c.host, c.port, timeout=10)
    conn.request("GET", "/")
    response = conn.getresponse()
    body = response.read().decode()
    assert response.status == 200 and "ExpEther pool manager" in body and 'id="assign-form"' in body
    assert c.request("GET", "/api/health") == (200, {"ok": True, "backend": "sim"})
