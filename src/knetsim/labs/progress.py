"""Saved progress: which tasks passed and when, best and last score, per lab and cluster.

One JSON file (``labs-progress.json``): in the knetsim state dir when grading ``knetsim up``,
else under ``$XDG_STATE_HOME/knetsim`` (default ``~/.local/state/knetsim``). Written
atomically (temp file + rename), so an interrupted check never leaves half a file.

    {"version": 1, "current": "services",
     "labs": {"services": {"started": "...", "cluster": "https://127.0.0.1:6443",
                           "tasks": {"clusterip": {"passed": true, "firstPassed": "...", "lastChecked": "...",
                                                   "best": 6, "last": 6, "max": 6}}}}}
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..model.timestamps import now_rfc3339
from .model import Lab, LabResult

FILENAME = "labs-progress.json"


def real_cluster_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "knetsim"


class ProgressStore:
    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory) / FILENAME
        try:
            data = json.loads(self.path.read_text())
        except (FileNotFoundError, ValueError):
            data = {}
        if not isinstance(data, dict) or data.get("version") != 1:
            data = {"version": 1, "current": None, "labs": {}}
        self.data: dict[str, Any] = data

    @property
    def current(self) -> str | None:
        return self.data.get("current")

    def lab(self, name: str) -> dict[str, Any]:
        return self.data["labs"].setdefault(name, {"started": None, "cluster": None, "tasks": {}})  # type: ignore[no-any-return]

    def started(self, lab: Lab, cluster: str) -> None:
        entry = self.lab(lab.name)
        entry["started"] = entry.get("started") or now_rfc3339()
        entry["cluster"] = cluster
        self.data["current"] = lab.name
        self.save()

    def reset(self, lab: Lab) -> None:
        self.data["labs"].pop(lab.name, None)
        if self.data.get("current") == lab.name:
            self.data["current"] = None
        self.save()

    def record(self, result: LabResult, when: str | None = None) -> None:
        when = when or now_rfc3339()
        entry = self.lab(result.lab)
        entry["cluster"] = result.cluster
        for t in result.tasks:
            saved = entry["tasks"].setdefault(t.task, {"passed": False, "firstPassed": None, "best": 0})
            saved["last"] = t.score
            saved["max"] = t.max_points
            saved["lastChecked"] = when
            saved["best"] = max(int(saved.get("best") or 0), t.score)
            if t.passed:
                saved["passed"] = True
                saved["firstPassed"] = saved.get("firstPassed") or when
        self.save()

    def rows(self, labs: list[Lab]) -> list[list[str]]:
        """One row per task of every lab that was started or checked: LAB TASK STATUS BEST LAST CHECKED PASSED."""
        out = []
        for lab in labs:
            entry = self.data["labs"].get(lab.name)
            if entry is None:
                continue
            for task in lab.tasks:
                saved = entry["tasks"].get(task.id) or {}
                # STATUS is the latest check; PASSED keeps when it first passed.
                last = saved.get("last")
                if not saved.get("lastChecked") or last is None:
                    status = "not checked"
                elif last == saved.get("max", task.max_points):
                    status = "passed"
                elif saved.get("passed"):
                    status = "passed earlier"
                else:
                    status = "partial" if last else "failed"
                out.append([lab.name, task.id, status, f"{saved.get('best', 0)}/{task.max_points}",
                            f"{saved['last']}/{task.max_points}" if "last" in saved else "-",
                            saved.get("lastChecked") or "-", saved.get("firstPassed") or "-"])
        return out

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, self.path)
