"""``knetsim doctor --scan PATH``: code and scripts that still read the v1 Endpoints API.

Endpoints is deprecated since v1.33 (kubectl warns); it caps at 1,000 addresses and misses
dual-stack and terminating state. Each hit names file and line and shows the EndpointSlice
query that replaces it, selected by the ``kubernetes.io/service-name`` label.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TEXT_SUFFIXES = (".py", ".go", ".sh", ".bash", ".js", ".ts", ".java", ".rb", ".yaml", ".yml", ".json", ".md",
                 ".txt", ".rs", ".kt", ".cs", ".php", "")
SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", "vendor", "dist", "build"}

# (pattern, what it is, the EndpointSlice replacement)
PATTERNS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"kubectl\s+(?:-n\s+\S+\s+)?get\s+(?:endpoints|ep)\b(?:\s+([a-z0-9-]+))?"),
     "kubectl get endpoints",
     "kubectl get endpointslices -l kubernetes.io/service-name={svc}"),
    (re.compile(r"kubectl\s+(?:-n\s+\S+\s+)?describe\s+(?:endpoints|ep)\b(?:\s+([a-z0-9-]+))?"),
     "kubectl describe endpoints",
     "kubectl describe endpointslices -l kubernetes.io/service-name={svc}"),
    (re.compile(r"(?:list|read|watch)_namespaced_endpoints\b|list_endpoints_for_all_namespaces\b"),
     "kubernetes Python client CoreV1Api endpoints call",
     "DiscoveryV1Api().list_namespaced_endpoint_slice(namespace, "
     "label_selector=\"kubernetes.io/service-name={svc}\")"),
    (re.compile(r"CoreV1\(\)\.Endpoints\("),
     "client-go CoreV1().Endpoints",
     "clientset.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "
     "discoveryv1.LabelServiceName + \"={svc}\"})"),
    (re.compile(r"/api/v1/(?:namespaces/[^/\s\"']+/)?endpoints\b"),
     "raw API path /api/v1/.../endpoints",
     "/apis/discovery.k8s.io/v1/namespaces/<ns>/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D{svc}"),
    (re.compile(r"^\s*kind:\s*Endpoints\s*$"),
     "a v1 Endpoints manifest",
     "write an EndpointSlice (discovery.k8s.io/v1) labelled kubernetes.io/service-name: {svc} instead"),
)


@dataclass(frozen=True, slots=True)
class ScanHit:
    file: str
    line: int
    text: str
    what: str
    replacement: str

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "text": self.text, "what": self.what,
                "replacement": self.replacement}


def _files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.suffix in TEXT_SUFFIXES and path.stat().st_size < 2_000_000:
                out.append(path)
    return out


def scan(paths: list[str]) -> list[ScanHit]:
    hits = []
    for raw in paths:
        root = Path(raw)
        if not root.exists():
            raise FileNotFoundError(f'the path "{raw}" does not exist')
        for path in _files(root):
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except (UnicodeDecodeError, OSError):
                continue
            for number, line in enumerate(lines, start=1):
                for pattern, what, replacement in PATTERNS:
                    match = pattern.search(line)
                    if match is None:
                        continue
                    svc = match.group(1) if match.groups() and match.group(1) else "<service>"
                    hits.append(ScanHit(str(path), number, line.strip(), what, replacement.format(svc=svc)))
                    break
    return hits
