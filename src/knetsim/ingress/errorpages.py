"""The answers nginx writes itself: status lines and its built-in error pages.

nginx's pages (``ngx_http_special_response.c``) with ``server_tokens off`` (ingress-nginx's
default): the status in a title and a heading, then ``nginx`` without a version, CRLF line ends,
``Content-Type: text/html``. 204 and 304 have no body. ingress-nginx also clears the ``Server``
header (``more_clear_headers Server``), so none is sent.
"""

from __future__ import annotations

REASONS = {
    200: "OK", 204: "No Content", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
    307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request", 401: "Unauthorized",
    403: "Forbidden", 404: "Not Found", 405: "Not Allowed", 413: "Request Entity Too Large",
    414: "Request-URI Too Large", 429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
    503: "Service Temporarily Unavailable", 504: "Gateway Time-out",
}


# The titles of nginx's pages where they differ from the status line's reason phrase.
_TITLES = {401: "Authorization Required", 408: "Request Time-out", 416: "Requested Range Not Satisfiable"}


def reason(status: int) -> str:
    return REASONS.get(status, "Unknown")


def page(status: int) -> str:
    """nginx's own page for ``status`` ("" for the codes that have none)."""
    if status in (204, 304) or status < 300:
        return ""
    line = f"{status} {_TITLES.get(status, reason(status))}"
    return (f"<html>\r\n<head><title>{line}</title></head>\r\n<body>\r\n<center><h1>{line}</h1></center>\r\n"
            "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
