"""The backends behind the real nginx: one loopback HTTP server per upstream, each saying who it is.

Every upstream of the rendered configuration (a Service port with ready endpoints, an auth
Service, a default-backend Service) gets a threaded HTTP server on 127.0.0.1. It answers every
method with the status its program answers (``model.programs.http_status``: httpbin's
``/status/CODE``; 200 for any other server), the header ``X-Knetsim-Backend: <upstream>``, and a
JSON body with what it received — method, the request line's URI, the headers — so the comparison
can read which backend nginx chose and what it sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BACKEND_HEADER = "X-Knetsim-Backend"

Answer = Callable[[str, str, dict[str, str]], tuple[int, dict[str, str]]]  # (method, uri, headers) → status


@dataclass(slots=True)
class Backend:
    name: str
    server: ThreadingHTTPServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])


def _handler(name: str, answer: Answer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            remaining = length
            while remaining > 0:
                chunk = self.rfile.read(min(remaining, 65536))
                if not chunk:
                    break
                remaining -= len(chunk)
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, extra = answer(self.command, self.path, headers)
            body = json.dumps({"backend": name, "method": self.command, "uri": self.path,
                               "headers": headers}).encode() if status not in (204, 304) else b""
            self.send_response(status)
            self.send_header(BACKEND_HEADER, name)
            for key, value in extra.items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _serve

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


def start(name: str, answer: Answer) -> Backend:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(name, answer))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name=f"backend-{name}", daemon=True)
    thread.start()
    return Backend(name, server, thread)


def stop(backends: list[Backend]) -> None:
    for backend in backends:
        backend.server.shutdown()
        backend.server.server_close()
