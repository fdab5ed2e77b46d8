"""The eBPF render reads as Cilium prints its maps (an independent source for golden/ebpf.txt).

Upstream facts, from cilium/cilium ``cilium-dbg/cmd/bpf_lb_list.go`` and ``helpers.go``
(``TablePrinter``) and ``pkg/maps/lbmap/ipv4.go`` (the ``String()`` of each key and value),
copied here as literals so the test does not share code with the renderer:

* titles ``SERVICE ADDRESS`` / ``BACKEND ADDRESS (REVNAT_ID) (SLOT)``; ``--backends`` and
  ``--revnat`` print ``ID`` and the same second title;
* ``TablePrinter``: ``tabwriter.NewWriter(os.Stdout, 5, 0, 3, ' ', 0)``, every line
  ``"%s\\t%s\\t\\n"``: a column is as wide as its widest cell plus 3 (at least 5);
* a service key: ``<ip>:<port>/<PROTO>[/i] (<slot>)``; slot 0: ``0.0.0.0:0 (<revnat>) (0) [<flags>]``;
  other slots: ``<ip>:<port>/<PROTO> (<revnat>) (<slot>)``; a backend: ``<PROTO>://<ip>``;
  a reverse-NAT entry: ``<ip>:<port>``.

knetsim drops the trailing blanks tabwriter leaves (both cells end in a tab).
"""

from __future__ import annotations

import re

import pytest

from knetsim.dataplane import render

KEY = re.compile(r"^\d+\.\d+\.\d+\.\d+:\d+/(TCP|UDP|SCTP)(/i)? \((\d+)\)$")
MASTER = re.compile(r"^0\.0\.0\.0:0 \((\d+)\) \(0\) \[[A-Za-z, -]+\]$")
SLOT = re.compile(r"^\d+\.\d+\.\d+\.\d+:\d+/(TCP|UDP|SCTP) \((\d+)\) \((\d+)\)$")
BACKEND = re.compile(r"^(TCP|UDP|SCTP)://\d+\.\d+\.\d+\.\d+$")
REVNAT = re.compile(r"^\d+\.\d+\.\d+\.\d+:\d+$")
SECTIONS = {"# cilium bpf lb list": ("SERVICE ADDRESS", "BACKEND ADDRESS (REVNAT_ID) (SLOT)"),
            "# cilium bpf lb list --backends": ("ID", "BACKEND ADDRESS (REVNAT_ID) (SLOT)"),
            "# cilium bpf lb list --revnat": ("ID", "BACKEND ADDRESS (REVNAT_ID) (SLOT)")}


def go_tabwriter(rows: list[tuple[str, str]]) -> list[str]:
    """tabwriter(minwidth=5, tabwidth=0, padding=3, ' ', 0) over "a\\tb\\t\\n" lines, trailing blanks dropped."""
    width = max(5, max(len(a) for a, _ in rows) + 3)
    return [(a + " " * (width - len(a)) + b).rstrip() for a, b in rows]


def sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line in SECTIONS:
            current = line
            out[current] = []
        elif current and line:
            out[current].append(line)
        elif not line:
            current = None
    return out


@pytest.fixture(params=["worker", "worker2"])
def text(flow_state, request):
    return render(flow_state, "ebpf", request.param).text


def test_every_listing_is_laid_out_as_cilium_prints_it(text):
    found = sections(text)
    assert list(found) == list(SECTIONS)
    for title, lines in found.items():
        rows = [tuple(re.split(r"\s{3,}", line, maxsplit=1)) for line in lines]
        assert rows[0] == SECTIONS[title], title
        assert all(len(r) == 2 for r in rows), title
        assert lines == go_tabwriter(rows), f"{title}: columns not as Go's tabwriter aligns them"


def test_every_entry_has_upstreams_format(text):
    found = sections(text)
    revnats = set()
    for line in found["# cilium bpf lb list"][1:]:
        key, value = re.split(r"\s{3,}", line, maxsplit=1)
        slot = int(KEY.match(key).group(3))
        if slot == 0:
            m = MASTER.match(value)
            assert m, value
            revnats.add(m.group(1))
        else:
            m = SLOT.match(value)
            assert m and int(m.group(3)) == slot, value
    for line in found["# cilium bpf lb list --backends"][1:]:
        bid, value = re.split(r"\s{3,}", line, maxsplit=1)
        assert bid.isdigit() and BACKEND.match(value), line
    ids = set()
    for line in found["# cilium bpf lb list --revnat"][1:]:
        rid, value = re.split(r"\s{3,}", line, maxsplit=1)
        assert REVNAT.match(value), line
        ids.add(rid)
    assert revnats == ids  # every frontend's reverse-NAT entry exists
