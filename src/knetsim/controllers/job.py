"""The Job controller: ``parallelism`` pods until ``completions`` succeed or ``backoffLimit`` failures.

Finished pods stay (their exit codes and logs are the point of a Job); a failed one is replaced until
the backoff limit is exceeded. The status counts the pods (active, ready, succeeded, failed) and ends
with SuccessCriteriaMet + Complete, or FailureTarget + Failed, with the job-controller's event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..apiserver.store import Key
from ..cluster.workloadstatus import TERMINAL, phase
from .base import Batch
from .podowner import PodOwner


class JobController(PodOwner):
    name = "job-controller"
    kind = "Job"
    api_version = "batch/v1"

    def manage(self, key: Key, job: dict[str, Any], pods: list[dict[str, Any]], batch: Batch) -> None:
        spec = job.get("spec") or {}
        finished = [p for p in pods if phase(p) in TERMINAL]
        active = [p for p in pods if phase(p) not in TERMINAL]
        wanted = job_active_wanted(spec, finished)
        step = self.burst(key, wanted - len(active))
        if step > 0:
            # Templates for this burst only: a parallelism of 100,000 is not expanded at once.
            this_burst = job if step == wanted - len(active) else \
                {**job, "spec": {**spec, "parallelism": step, "completions": step}}
            templates = [body for body, _ in self.expand(this_burst, []).pods][:step]
            for pod, name in zip(templates, self.fresh_names(key, len(templates), batch, len(pods)), strict=True):
                pod["metadata"]["name"] = name
                self.create_pod(job, pod, batch)
                active.append(pod)
        elif step < 0:
            # Fewer wanted (parallelism lowered, the Job done): the youngest go.
            for pod in sorted(active, key=lambda p: (p["metadata"].get("creationTimestamp") or "",
                                                     p["metadata"]["name"]))[len(active) + step:]:
                self.delete_pod(job, pod["metadata"].get("namespace", ""), pod["metadata"]["name"], batch)
                active.remove(pod)
        status = job_status(job, [*finished, *active], batch.now, job.get("status") or {})
        job_events(batch, job, status)
        self.write_status(key, job, status, batch)


def job_events(batch: Batch, job: Mapping[str, Any], status: Mapping[str, Any]) -> None:
    """The job-controller's Completed / BackoffLimitExceeded when the Job reaches its end."""
    def ended(st: Mapping[str, Any]) -> str:
        types = {c.get("type") for c in st.get("conditions") or [] if c.get("status") == "True"}
        return "Complete" if "Complete" in types else "Failed" if "Failed" in types else ""
    now_end, before = ended(status), ended(job.get("status") or {})
    if not now_end or before:
        return
    if now_end == "Complete":
        batch.event(job, "Completed", "Job completed", "job-controller")
    else:
        batch.event(job, "BackoffLimitExceeded", "Job has reached the specified backoff limit", "job-controller",
                    type_="Warning")


def job_active_wanted(spec: Mapping[str, Any], finished: list[Mapping[str, Any]]) -> int:
    """How many pods the Job controller keeps active, given its finished pods."""
    phases = [(p.get("status") or {}).get("phase") for p in finished]
    succeeded, failed = phases.count("Succeeded"), phases.count("Failed")
    parallelism = int(spec.get("parallelism", 1) if spec.get("parallelism") is not None else 1)
    if failed > int(spec.get("backoffLimit", 6) if spec.get("backoffLimit") is not None else 6):
        return 0
    completions = spec.get("completions")
    remaining = (0 if succeeded else parallelism) if completions is None else int(completions) - succeeded
    return max(0, min(parallelism, remaining))


def job_status(job: Mapping[str, Any], pods: list[Mapping[str, Any]], now: str,
               old: Mapping[str, Any]) -> dict[str, Any]:
    """batch/v1 JobStatus from the Job's pods: active/ready/succeeded/failed, and the terminal
    conditions (SuccessCriteriaMet + Complete, or FailureTarget + Failed) with completionTime."""
    spec = job.get("spec") or {}
    phases = [(p.get("status") or {}).get("phase") for p in pods]
    succeeded, failed = phases.count("Succeeded"), phases.count("Failed")
    active = [p for p, ph in zip(pods, phases, strict=True) if ph not in ("Succeeded", "Failed")]
    ready = sum(1 for p in active if any(c.get("type") == "Ready" and c.get("status") == "True"
                                         for c in (p.get("status") or {}).get("conditions") or []))
    status: dict[str, Any] = {"startTime": old.get("startTime") or now}
    terminal = [c for c in old.get("conditions") or [] if c.get("type") in ("Complete", "Failed")]
    completions = spec.get("completions")
    backoff = int(spec.get("backoffLimit", 6) if spec.get("backoffLimit") is not None else 6)
    conditions = list(old.get("conditions") or [])
    if not terminal:
        done = succeeded >= int(completions) if completions is not None else succeeded > 0 and not active
        if done:
            message = "Reached expected number of succeeded pods"
            conditions = [_job_condition("SuccessCriteriaMet", "CompletionsReached", message, now),
                          _job_condition("Complete", "CompletionsReached", message, now)]
            status["completionTime"] = now
        elif failed > backoff:
            message = "Job has reached the specified backoff limit"
            conditions = [_job_condition("FailureTarget", "BackoffLimitExceeded", message, now),
                          _job_condition("Failed", "BackoffLimitExceeded", message, now)]
    elif old.get("completionTime"):
        status["completionTime"] = old["completionTime"]
    if active:
        status["active"] = len(active)
    if succeeded:
        status["succeeded"] = succeeded
    if failed:
        status["failed"] = failed
    status["ready"] = ready
    status["terminating"] = 0
    status["uncountedTerminatedPods"] = {}
    if conditions:
        status["conditions"] = conditions
    return status


def _job_condition(type_: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {"type": type_, "status": "True", "reason": reason, "message": message, "lastProbeTime": now,
            "lastTransitionTime": now}
