"""An HTTP client of the pool manager's API (the CLI's and the tests'): one keep-alive
connection, JSON in and out, an error as :class:`ClientError` with the server's one line."""

from __future__ import annotations

import http.client
import json
import urllib.parse
from typing import Any


class ClientError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class Client:
    def __init__(self, url: str, token: str | None, timeout: float = 10.0):
        u = urllib.parse.urlsplit(url)
        if u.scheme != "http" or not u.hostname:
            raise ClientError(0, f"--url {url}: expected http://HOST:PORT")
        try:
            self.port = u.port or 80
        except ValueError:
            raise ClientError(0, f"--url {url}: bad port") from None
        self.url, self.host, self.token, self.timeout = url, u.hostname, token, timeout
        self.base = u.path.rstrip("/")
        self.conn: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
        """(status, decoded JSON) for any status; ClientError only when the server is not reached."""
        headers = {"Accept": "application/json"}
        token = self.token if token is None else token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):  # a kept-alive connection the server closed is opened again once
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.conn.request(method, self.base + path, body=data, headers=headers)
                response = self.conn.getresponse()
                raw = response.read()
                break
            except (ConnectionError, http.client.HTTPException, OSError) as e:
                self.close()
                if attempt or not isinstance(
                    e, ConnectionResetError | http.client.RemoteDisconnected | BrokenPipeError
                ):
                    raise ClientError(0, f"cannot reach the pool manager at {self.url}: {e}") from None
        try:
            return response.status, json.loads(raw) if raw else None
        except ValueError:
            # Not a pool manager's answer (another server at that URL): its start, on one line.
            text = " ".join(raw.decode(errors="replace").split())
            return response.status, {"error": f"not a pool manager's answer: {text[:120]}"}

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """The decoded answer; ClientError with the server's message on any error status."""
        status, answer = self.request(method, path, body)
        if status >= 400:
            message = answer.get("error") if isinstance(answer, dict) else None
            raise ClientError(status, f"{status}: {message or answer or 'an empty answer'}")
        return answer

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
