"""``tca expether pool serve``: the pool manager on one SQLite file, served by uvicorn.

One manager per database: the manager holds an exclusive lock on ``DB.lock`` while it runs,
because the backend's state lives in the manager's process. ``--port 0`` takes a free port;
the first line on stdout names the URL.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import socket
import sqlite3
import sys
from pathlib import Path

from tca import TcaError
from tca.expether.pool.backend import BackendError, make_backend
from tca.expether.pool.rules import PoolError

TOKEN_ENV = "TCA_POOL_ADMIN_TOKEN"


def serve(
    db: str, host: str, port: int, admin_token: str | None, backend: str, options: dict | None = None
) -> int:
    """Serves until SIGTERM or SIGINT; ``options`` go to :func:`make_backend`."""
    path = Path(db)
    if not path.parent.is_dir():
        raise TcaError(f"--db {db}: directory {path.parent} does not exist")
    if not 0 <= port <= 65535:
        raise TcaError(f"--port {port}: expected 0..65535")
    # What a start-up that fails (a busy port, a file that is no database) leaves is removed.
    ours = [Path(f"{path}{suffix}") for suffix in ("", ".lock", "-wal", "-shm", "-journal")]
    ours = [f for f in ours if not f.exists()]
    lock = open(f"{path}.lock", "a+")  # noqa: SIM115 - held for the life of the server
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise TcaError(f"--db {db}: another pool manager is serving this database") from None
    try:
        system = make_backend(backend, **(options or {}))
    except BackendError as e:
        _remove(ours)
        raise TcaError(str(e)) from None
    try:
        _serve(db, path, host, port, admin_token, backend, system)
    except TcaError:
        _remove(ours)
        raise
    finally:
        system.close()
    return 0


def _remove(files: list[Path]) -> None:
    for f in files:
        f.unlink(missing_ok=True)


def _serve(db: str, path: Path, host: str, port: int, admin_token: str | None, backend: str, system) -> None:
    import uvicorn

    from tca.expether.pool.api import create_app
    from tca.expether.pool.manager import Manager
    from tca.expether.pool.store import Store

    try:
        manager = Manager(Store(path), system)
    except BackendError as e:
        raise TcaError(str(e)) from None
    except sqlite3.DatabaseError as e:
        raise TcaError(f"--db {db}: not a pool database ({e})") from None

    token = admin_token or os.environ.get(TOKEN_ENV)
    try:
        if token:
            manager.ensure_admin_token(token)
        elif not manager.has_admin_token():
            token = secrets.token_urlsafe(24)
            manager.ensure_admin_token(token)
            print(f"tca expether pool: new admin token (shown once): {token}", file=sys.stderr, flush=True)
    except PoolError as e:
        raise TcaError(f"--admin-token: {e.message}") from None

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, so that asyncio sets TCP_NODELAY on each connection (no 40 ms
    # delayed-ACK stalls on kept-alive connections).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        raise TcaError(f"cannot listen on {host}:{port}: {e.strerror}") from None
    sock.listen(128)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    print(f"tca expether pool: http://{shown}:{bound}/ (database {db}, backend {backend})", flush=True)
    config = uvicorn.Config(create_app(manager), log_level="warning", access_log=False)

    class Server(uvicorn.Server):
        # uvicorn re-raises SIGTERM once it has shut down, which ends the process before any
        # `finally`: the backend lets go of its system here (a software system is stopped).
        async def shutdown(self, sockets=None):
            await super().shutdown(sockets)
            system.close()

    Server(config).run(sockets=[sock])
