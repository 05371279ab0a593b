"""Concurrent assign and unassign against a running pool manager: 8 clients x 200 random
requests. Afterwards no device is in two groups, no host has more than 32 devices, and the
device table, the audit log and the hot-plug events tell the same story."""

from __future__ import annotations

import random
import threading
import time

import pytest
from pool_helpers import check_consistent, populate, serving

THREADS, REQUESTS = 8, 200
VLANS = [10, 20, 30]
DEVICES = 48  # more than one host can take (32): some assigns must be refused


def pick(rng: random.Random) -> int:
    """VLAN 10 four times out of five: it stays at its limit of 32 devices."""
    return 10 if rng.random() < 0.8 else rng.choice(VLANS[1:])


@pytest.fixture
def pool(tmp_path):
    yield from serving(tmp_path)


def test_concurrent_assign_unassign(pool):
    populate(pool.client(), VLANS, DEVICES)
    # Fill VLAN 10 to its limit first, so the random phase runs into it.
    c = pool.client()
    for i in range(32):
        c.call("POST", f"/api/devices/d{i}/assign", {"vlan": 10})
    results: list[list[tuple]] = [[] for _ in range(THREADS)]
    failures: list[BaseException] = []

    def worker(n: int) -> None:
        rng = random.Random(n)
        client = pool.client()
        try:
            for _ in range(REQUESTS):
                device = f"d{rng.randrange(DEVICES)}"
                if rng.random() < 0.9:
                    status, answer = client.request(
                        "POST", f"/api/devices/{device}/assign", {"vlan": pick(rng)}
                    )
                else:
                    status, answer = client.request("POST", f"/api/devices/{device}/unassign")
                results[n].append((status, answer))
        except BaseException as e:  # reported below, with the thread's number
            failures.append(e)
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    elapsed = time.perf_counter() - start
    assert not failures, failures
    flat = [r for rs in results for r in rs]
    assert len(flat) == THREADS * REQUESTS
    statuses = {s for s, _ in flat}
    assert statuses <= {200, 409}, statuses
    refused = [a["error"] for s, a in flat if s == 409]
    assert refused and all("at most 32 per host" in e for e in refused)
    print(f"{len(flat)} requests from {THREADS} clients in {elapsed:.2f} s ({len(flat) / elapsed:.0f}/s)")

    devices = c.call("GET", "/api/devices")
    audit = [
        a for since in range(0, 10_000, 1000) for a in c.call("GET", f"/api/audit?since={since}&limit=1000")
    ]
    audit = list({a["id"]: a for a in audit}.values())
    events = [
        e for since in range(0, 10_000, 1000) for e in c.call("GET", f"/api/events?since={since}&limit=1000")
    ]
    events = list({e["id"]: e for e in events}.values())
    final = check_consistent(devices, audit, events)
    # Every answer the clients got is in the audit log, and the changes they saw happened.
    ok = [a for a in audit if a["action"] in ("assign", "unassign")]
    assert len(ok) == 32 + len(flat)
    assert sum(a["result"] == "refused" for a in ok) == len(refused)
    changed = sum(1 for s, a in flat if s == 200 and a["changed"])
    assert sum(a["result"] == "ok" and a["detail"]["changed"] for a in ok) == 32 + changed
    per_host = {v: sum(1 for vlan, _ in final.values() if vlan == v) for v in VLANS}
    assert all(n <= 32 for n in per_host.values()), per_host
    assert {h["vlan"]: h["devices"] for h in c.call("GET", "/api/hosts")} == per_host
