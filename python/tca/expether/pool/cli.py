"""``tca expether pool ...``: run the pool manager (``serve``) and talk to it.

The client commands take ``--url`` (default $TCA_POOL_URL or http://127.0.0.1:8470) and
``--token`` (default $TCA_POOL_TOKEN); ``--json`` prints the API's answer as it is. Every error
is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.parse

from tca import TcaError

DEFAULT_URL = "http://127.0.0.1:8470"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("pool", help="the device-pool manager (seed 002 §3.3.1): serve it, talk to it")
    sub = p.add_subparsers(dest="pool_command", required=True)

    s = sub.add_parser("serve", help="run the manager on a SQLite database")
    s.add_argument("--db", required=True, metavar="FILE", help="SQLite database (created if missing)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8470, help="port (default 8470; 0: a free one)")
    s.add_argument(
        "--admin-token", help="admin token to accept (at least 16 characters; or $TCA_POOL_ADMIN_TOKEN)"
    )
    s.add_argument(
        "--backend",
        default="sim",
        help="the ExpEther system driven: sim (the protocol core's switch) or software (expether-system)",
    )
    s.add_argument(
        "--system",
        metavar="SOCKET",
        help="software: the system's control socket; attached to if one listens there, else one is started",
    )
    s.add_argument(
        "--system-hosts",
        type=int,
        help="software: host namespaces of the system started (default 2), or of the one attached to",
    )
    s.add_argument(
        "--system-devices",
        type=int,
        help="software: pooled devices of the system started (default 2), or of the one attached to",
    )
    s.set_defaults(func=cmd_serve)

    def client(name: str, text: str):
        c = sub.add_parser(name, help=text)
        c.add_argument("--url", default=os.environ.get("TCA_POOL_URL", DEFAULT_URL), help="the manager's URL")
        c.add_argument(
            "--token", default=os.environ.get("TCA_POOL_TOKEN"), help="API token ($TCA_POOL_TOKEN)"
        )
        c.add_argument("--json", action="store_true", help="print the API's JSON answer")
        c.set_defaults(func=cmd_client)
        return c

    client("status", "hosts, devices and groups in one view")
    client("hosts", "the hosts (a host token: its own)")
    client("devices", "the devices (a host token: its group's)")
    e = client("events", "hot-plug and hot-remove events")
    e.add_argument("--vlan", type=int, help="one host's events")
    e.add_argument("--since", type=int, default=0, help="events after this id")
    a = client("assign", "assign a device to the host on a VLAN (admin)")
    a.add_argument("device", help="device id, name or MAC")
    a.add_argument("vlan", type=int, help="the host's VLAN id")
    u = client("unassign", "return a device to the pool (admin)")
    u.add_argument("device", help="device id, name or MAC")
    h = client("add-host", "add a host bridge to the inventory (admin)")
    h.add_argument("name")
    h.add_argument("vlan", type=int)
    h.add_argument("mac")
    d = client("add-device", "add a device bridge to the pool (admin)")
    d.add_argument("name")
    d.add_argument("kind", help="e.g. ssd, gpu, nic")
    d.add_argument("mac")
    r = client("remove", "remove a host or device from the inventory (admin)")
    r.add_argument("what", choices=["host", "device"])
    r.add_argument("ref", help="id, name or MAC")
    t = client("token", "create a token (admin); prints the secret once")
    t.add_argument("name")
    t.add_argument("--role", required=True, choices=["admin", "host", "bridge"])
    t.add_argument("--vlan", type=int, help="the host's VLAN id (--role host)")
    client("audit", "the audit log (admin)").add_argument("--since", type=int, default=0)
    rep = client("report", "send a bridge report (admin or bridge token)")
    rep.add_argument("bridge", help="the bridge's MAC")
    rep.add_argument("counters", nargs="+", metavar="NAME=NUMBER")


def cmd_serve(args: argparse.Namespace) -> int:
    from tca.cli.options import reject_empty
    from tca.expether.pool.server import serve

    reject_empty(args)
    options = {"system": args.system, "hosts": args.system_hosts, "devices": args.system_devices}
    names = {"system": "--system", "hosts": "--system-hosts", "devices": "--system-devices"}
    given = [names[k] for k, v in options.items() if v is not None]
    if args.backend == "sim" and given:
        verb = "applies" if len(given) == 1 else "apply"
        raise TcaError(
            f"{', '.join(given)} {verb} to --backend software only (the sim backend drives no system)"
        )
    return serve(args.db, args.host, args.port, args.admin_token, args.backend, options)


def _ref(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def _request(args: argparse.Namespace) -> tuple[str, str, object]:
    c = args.pool_command
    if c in ("status", "hosts", "devices"):
        return "GET", f"/api/{c}", None
    if c == "events":
        query = f"?since={args.since}" + (f"&vlan={args.vlan}" if args.vlan is not None else "")
        return "GET", "/api/events" + query, None
    if c == "audit":
        return "GET", f"/api/audit?since={args.since}&limit=1000", None
    if c == "assign":
        return "POST", f"/api/devices/{_ref(args.device)}/assign", {"vlan": args.vlan}
    if c == "unassign":
        return "POST", f"/api/devices/{_ref(args.device)}/unassign", None
    if c == "add-host":
        return "POST", "/api/hosts", {"name": args.name, "vlan": args.vlan, "mac": args.mac}
    if c == "add-device":
        return "POST", "/api/devices", {"name": args.name, "kind": args.kind, "mac": args.mac}
    if c == "remove":
        return "DELETE", f"/api/{args.what}s/{_ref(args.ref)}", None
    if c == "token":
        body = {"name": args.name, "role": args.role}
        if args.vlan is not None:
            body["vlan"] = args.vlan
        return "POST", "/api/tokens", body
    if c == "report":
        counters = {}
        for item in args.counters:
            key, eq, value = item.partition("=")
            try:
                counters[key] = int(value) if value.isdigit() else float(value)
            except ValueError:
                eq = ""
            if not eq:
                raise TcaError(f"report: {item!r}: expected NAME=NUMBER")
        return "POST", "/api/reports", {"bridge": args.bridge, "counters": counters}
    raise TcaError(f"unknown pool command {c}")


def cmd_client(args: argparse.Namespace) -> int:
    from tca.expether.pool.client import Client, ClientError

    if not args.token:
        raise TcaError("no token: pass --token TOKEN or set TCA_POOL_TOKEN")
    method, path, body = _request(args)
    try:
        answer = Client(args.url, args.token).call(method, path, body)
    except ClientError as e:
        raise TcaError(e.message) from None
    if args.json:
        print(json.dumps(answer, indent=1))
    else:
        print(render(args.pool_command, answer))
    return 0


def _table(rows: list[dict], columns: list[str]) -> str:
    cells = [[("-" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


def render(command: str, answer) -> str:
    """A short human-readable form of an answer."""
    if command == "status":
        lines = [
            f"backend {answer['backend']}: {answer['hosts']} host(s), {answer['devices']} device(s),"
            f" {answer['assigned']} assigned"
            + (f", {answer['in_pool']} in the pool" if "in_pool" in answer else "")
            + " (limits: {hosts} hosts, {devices_per_host} devices per host)".format(**answer["limits"])
        ]
        for g in answer["groups"]:
            devs = ", ".join(f"{d['name']}@{d['slot']}" for d in g["devices"]) or "none"
            lines.append(f"VLAN {g['vlan']:>4} {g['host']}: {devs}")
        return "\n".join(lines)
    if command == "hosts":
        return _table(answer, ["id", "name", "vlan", "mac", "devices"])
    if command == "devices":
        return _table(answer, ["id", "name", "kind", "mac", "vlan", "slot"])
    if command == "events":
        return _table(answer, ["id", "at", "vlan", "kind", "slot", "device"])
    if command == "audit":
        return _table(answer, ["id", "at", "who", "action", "target", "result", "message"])
    if command in ("assign", "unassign"):
        where = f"VLAN {answer['vlan']} slot {answer['slot']}" if answer["vlan"] is not None else "the pool"
        change = "" if answer["changed"] else " (no change)"
        events = "".join(f"; {e['kind']} VLAN {e['vlan']} slot {e['slot']}" for e in answer["events"])
        return f"{answer['name']}: {where}{change}{events}"
    if command == "token":
        return f"token {answer['name']} ({answer['role']}): {answer['token']}"
    return json.dumps(answer)
