"""What the HTTP listeners log: one line for a client's fault, a traceback only for knetsim's.

aiohttp logs every request it could not handle with its traceback: a request line that is not
HTTP, a header too long, a body cut short by a client that went away. None of these is a bug, and
anyone who can reach the port (no token needed: the request never got that far) could fill the log
with them. The listeners (the API server, the front door) log through ``logger``, whose filter turns
such a record into one line naming the client and what was wrong with its request, at INFO. A
server bug (any other exception) keeps its traceback, so a 500 in the log always comes with one.
"""

from __future__ import annotations

import asyncio
import logging
import ssl

from aiohttp import http_exceptions

MAX_DETAIL = 160  # characters of the client's own bytes a log line repeats


def is_client_fault(exc: BaseException) -> bool:
    """A failure the client caused: a malformed request (4xx), or a connection it closed or broke."""
    if isinstance(exc, http_exceptions.HttpProcessingError):
        return 400 <= (exc.code or 400) < 500
    return isinstance(exc, ConnectionError | asyncio.IncompleteReadError | ssl.SSLError | TimeoutError)


def describe(exc: BaseException) -> str:
    """One short line: the exception's kind and the first line of what it says, control characters escaped."""
    text = (getattr(exc, "message", None) or str(exc) or "").strip()
    first = text.splitlines()[0] if text else ""
    first = first.encode("unicode_escape", "backslashreplace").decode("ascii")
    if len(first) > MAX_DETAIL:
        first = first[:MAX_DETAIL] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


class ClientFaultsOnOneLine(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and is_client_fault(exc):
            record.msg = f"{record.getMessage()}: {describe(exc)}"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


logger = logging.getLogger("knetsim.http")
logger.addFilter(ClientFaultsOnOneLine())
