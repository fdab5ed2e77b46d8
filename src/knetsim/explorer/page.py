"""One self-contained HTML page: the explorer's CSS and JavaScript inline, the data as JSON, nothing fetched.

``knetsim matrix -o html`` writes it with the data inside; ``knetsim up`` serves the same page
without data, and the script then reads ``data.json`` beside it (``apiserver/explorer.py``).
"""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

from ..cluster.state import ClusterState
from ..policy.matrix import Matrix
from .data import explorer_data


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def _script_json(data: Any) -> str:
    # Inside <script>, "</" would end the element early; \u003c keeps the JSON identical once parsed.
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")


def shell(title: str, data: Any | None) -> str:
    """The page; ``data`` None: the live form, which fetches data.json."""
    payload = "" if data is None else _script_json(data)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'">
<title>{html.escape(title)}</title>
<style>{_asset("explorer.css")}</style></head>
<body>
<header><h1>{html.escape(title)}</h1>
<label>namespace <select id="ns"></select></label>
<label>label <input id="label" placeholder="app=web" size="14"></label>
<label>port <select id="proto"><option>TCP</option><option>UDP</option><option>SCTP</option></select>
<input id="port" placeholder="any" size="6" inputmode="numeric"></label>
<span id="count"></span> <span>(<span id="level"></span>)</span>
<button id="reload" hidden>reload</button></header>
<nav><button data-tab="grid" aria-selected="true">Grid</button>
<button data-tab="map" aria-selected="false">Service map</button>
<span class="legend"><span class="ok">&#x2713; allowed</span><span class="partly">&#x25D0; partly</span>
<span class="no">&#x2717; denied</span><span>click a cell for why</span></span></nav>
<main id="gridview"><div id="gridwrap" style="flex:1;min-width:0"><div id="grid" role="grid" aria-label="connectivity">
<div id="space"><div id="cells"></div></div></div><ul id="notes"></ul></div>
<aside><h2 style="font-size:15px;margin:4px 0">Why</h2><div id="explain" aria-live="polite">Click a cell.</div></aside>
</main>
<section id="map" hidden></section>
<script id="knetsim-data" type="application/json">{payload}</script>
<script>{_asset("explorer.js")}</script>
</body></html>
"""


def page(state: ClusterState, m: Matrix, protocol: str = "TCP", port: int = 80) -> str:
    return shell("knetsim connectivity explorer", explorer_data(state, m, protocol, port))


__all__ = ["page", "shell"]
