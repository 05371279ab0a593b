"""The pool manager's REST API and web page (FastAPI).

Every request but ``GET /``, ``GET /api/health`` and ``GET /openapi.json`` carries
``Authorization: Bearer TOKEN``. Every answer is JSON; an error is ``{"error": "one line"}``
with a 4xx status: 400 bad input, 401 no or unknown token, 403 not allowed for the token's
role, 404 unknown host, device or token, 409 a conflict with the pool's state or limits,
413 a body over 64 KiB. The table of endpoints is in docs/expether.md ("Pool manager").
"""

import json
from importlib import resources
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from tca.expether.pool.manager import Caller, Manager
from tca.expether.pool.rules import PoolError, shown
from tca.expether.pool.store import LARGEST_ID

MAX_BODY = 64 * 1024


def error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


def fields(body: object, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
    """The body's fields, with a 400 for a missing or unknown one."""
    if not isinstance(body, dict):
        raise PoolError(400, "the request body must be a JSON object")
    unknown = sorted(set(body) - set(required) - set(optional))
    if unknown:
        raise PoolError(
            400, f"unknown field {shown(unknown[0])}: expected {', '.join(required + optional) or 'none'}"
        )
    for key in required:
        if key not in body:
            raise PoolError(400, f"missing field {shown(key)}")
    return body


async def json_body(request: Request) -> Any:
    """The request body as JSON, whatever the Content-Type says; None when empty. A body over
    ``MAX_BODY`` is refused as it comes, also one sent without a Content-Length (chunked)."""
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise PoolError(413, f"request body over {MAX_BODY} bytes")
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise PoolError(400, f"the request body is not valid JSON: {str(e).splitlines()[0]}") from None


def create_app(manager: Manager) -> FastAPI:
    app = FastAPI(
        title="ExpEther pool manager",
        description="The system manager of seed 002 §3.3.1: hosts, devices, assignment by VLAN.",
        docs_url=None,
        redoc_url=None,
    )
    page = resources.files("tca.expether.pool").joinpath("page.html").read_text()

    @app.exception_handler(PoolError)
    async def pool_error(_request: Request, e: PoolError):
        if e.status == 401:
            return error(401, e.message, **{"WWW-Authenticate": "Bearer"})
        return error(e.status, e.message)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, e: RequestValidationError):
        first = e.errors()[0] if e.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "request"
        return error(400, f"{where}: {first.get('msg', 'invalid')}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, e: StarletteHTTPException):
        message = {404: "no such endpoint", 405: "method not allowed here"}.get(e.status_code, str(e.detail))
        return error(e.status_code, message)

    @app.exception_handler(Exception)
    async def internal(_request: Request, e: Exception):
        return error(500, f"internal error: {type(e).__name__}: {e}".splitlines()[0])

    @app.middleware("http")
    async def body_limit(request: Request, call_next):
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            return error(413, f"request body over {MAX_BODY} bytes")
        return await call_next(request)

    def auth(action: str | None = None):
        """The caller of a request; a refused change (``action``) is recorded in the audit log."""

        def dependency(request: Request) -> Caller:
            header = request.headers.get("authorization")
            if header is None:
                e = PoolError(401, "missing token: send the header 'Authorization: Bearer TOKEN'")
            elif not header.startswith("Bearer ") or not header[7:].strip():
                e = PoolError(401, "malformed Authorization header: expected 'Bearer TOKEN'")
            else:
                caller = manager.authenticate(header[7:].strip())
                if caller is not None:
                    return caller
                e = PoolError(401, "unknown or revoked token")
            if action is not None:
                manager.refused("unauthenticated", action, request.url.path, {}, e)
            raise e

        return dependency

    Reader = Annotated[Caller, Depends(auth())]
    JsonBody = Annotated[Any, Depends(json_body)]

    def changer(action: str):
        """The caller of a change; a refused one is audited as ``action``."""
        return Annotated[Caller, Depends(auth(action))]

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> str:
        return page

    @app.get("/api/health")
    def health() -> dict:
        return {"ok": True, "backend": manager.backend.name}

    @app.get("/api/whoami")
    def whoami(caller: Reader) -> dict:
        return {"name": caller.name, "role": caller.role, "vlan": caller.vlan}

    @app.get("/api/status")
    def status(caller: Reader) -> dict:
        return manager.status(caller)

    @app.get("/api/hosts")
    def hosts(caller: Reader) -> list[dict]:
        return manager.hosts(caller)

    @app.post("/api/hosts", status_code=201)
    def create_host(body: JsonBody, caller: changer("create-host")) -> dict:
        manager.require_admin(caller, "create-host", "/api/hosts")
        b = fields(body, ("name", "vlan", "mac"))
        return manager.create_host(caller, b["name"], b["vlan"], b["mac"])

    @app.delete("/api/hosts/{ref}")
    def delete_host(ref: str, caller: changer("delete-host")) -> dict:
        return manager.delete_host(caller, ref)

    @app.get("/api/devices")
    def devices(caller: Reader) -> list[dict]:
        return manager.devices(caller)

    @app.post("/api/devices", status_code=201)
    def create_device(body: JsonBody, caller: changer("create-device")) -> dict:
        manager.require_admin(caller, "create-device", "/api/devices")
        b = fields(body, ("name", "kind", "mac"))
        return manager.create_device(caller, b["name"], b["kind"], b["mac"])

    @app.delete("/api/devices/{ref}")
    def delete_device(ref: str, caller: changer("delete-device")) -> dict:
        return manager.delete_device(caller, ref)

    @app.post("/api/devices/{ref}/assign")
    def assign(ref: str, body: JsonBody, caller: changer("assign")) -> dict:
        manager.require_admin(caller, "assign", ref)
        return manager.assign(caller, ref, fields(body, ("vlan",))["vlan"])

    @app.post("/api/devices/{ref}/unassign")
    def unassign(ref: str, body: JsonBody, caller: changer("unassign")) -> dict:
        if body is not None:
            fields(body, ())  # it takes none: a field is refused as on every other endpoint
        return manager.unassign(caller, ref)

    @app.get("/api/events")
    def events(
        caller: Reader,
        vlan: Annotated[int | None, Query(ge=0, le=4095)] = None,
        since: Annotated[int, Query(ge=0, le=LARGEST_ID)] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    ) -> list[dict]:
        return manager.events(caller, vlan, since, limit)

    @app.post("/api/reports", status_code=201)
    def report(body: JsonBody, caller: Reader) -> dict:
        if caller.role not in ("admin", "bridge"):
            raise PoolError(403, f"{caller.role} token {caller.name} may not send bridge reports")
        b = fields(body, ("bridge", "counters"))
        return manager.report(caller, b["bridge"], b["counters"])

    @app.get("/api/reports")
    def reports(caller: Reader, bridge: str | None = None) -> list[dict]:
        return manager.reports(caller, bridge)

    @app.get("/api/tokens")
    def tokens(caller: Reader) -> list[dict]:
        return manager.tokens(caller)

    @app.post("/api/tokens", status_code=201)
    def create_token(body: JsonBody, caller: changer("create-token")) -> dict:
        manager.require_admin(caller, "create-token", "/api/tokens")
        b = fields(body, ("name", "role"), ("vlan",))
        return manager.create_token(caller, b["name"], b["role"], b.get("vlan"))

    @app.delete("/api/tokens/{name}")
    def revoke_token(name: str, caller: changer("revoke-token")) -> dict:
        return manager.revoke_token(caller, name)

    @app.get("/api/audit")
    def audit(
        caller: Reader,
        since: Annotated[int, Query(ge=0, le=LARGEST_ID)] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    ) -> list[dict]:
        return manager.audit(caller, since, limit)

    return app
