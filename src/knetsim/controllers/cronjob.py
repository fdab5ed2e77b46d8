"""The CronJob controller (kube-controller-manager's v2, ``pkg/controller/cronjob/cronjob_controllerv2.go``).

At each schedule time it creates a Job from ``spec.jobTemplate`` named ``<cronjob>-<scheduled time in
minutes since the epoch>`` (the name is the lock against creating one run twice), annotated with
``batch.kubernetes.io/cronjob-scheduled-timestamp`` and controlled by the CronJob; it keeps
``status.active`` / ``lastScheduleTime`` / ``lastSuccessfulTime``, applies ``concurrencyPolicy``
(Allow, Forbid, Replace), ``suspend`` and ``startingDeadlineSeconds``, deletes the oldest finished
Jobs beyond the history limits, and records upstream's events with their words.

Time is the server's wall clock. After each sync the key is queued again for the next schedule time
(plus upstream's 100 ms), so nothing polls. The Jobs are created through the API's write path (the
registry: the Job strategy gives them their selector and labels), as upstream's controller posts them.

``KNETSIM_TEST_CRONJOB_CLOCK_OFFSET`` (seconds, in the environment of ``knetsim up``) moves this
controller's clock, and only its clock, ahead: a test hook so that an end-to-end test of a
``*/1`` schedule need not wait for the next minute. Nothing else reads it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from ..apiserver.errors import ApiError
from ..apiserver.registry import SERVER_BOOKKEEPING, Target, WriteOptions
from ..apiserver.resources import BY_KIND
from ..apiserver.store import Change, Key, Write
from ..model.cron import Schedule, ScheduleError, load_zone, parse
from ..model.jsonvalue import json_copy
from ..model.timestamps import parse_rfc3339
from .base import Batch, Controller, being_deleted
from .informer import controller_ref, key_of

log = logging.getLogger("knetsim.controllers")

SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
CLOCK_OFFSET_ENV = "KNETSIM_TEST_CRONJOB_CLOCK_OFFSET"
NEXT_SCHEDULE_DELTA = 0.1  # nextScheduleDelta: wake a little after the time, so it has passed
RETRY_AFTER = 5.0  # a failed create is retried (upstream's rate-limited requeue starts at 5 ms; a user sees seconds)
AS_CONTROLLER = WriteOptions(managed="controller", field_manager="kube-controller-manager")
COMPONENT = "cronjob-controller"
# The event correlator folds a repeat of the same event into its count within this window.
AGGREGATE_WINDOW = timedelta(minutes=10)

NONE_MISSED, FEW_MISSED, MANY_MISSED = "none", "few", "many"


def parse_time(text: Any) -> datetime | None:
    if not text:
        return None
    try:
        return parse_rfc3339(str(text)).astimezone(UTC)
    except ValueError:
        return None


def rfc3339(t: datetime, zone: tzinfo = UTC) -> str:
    """Go's time.RFC3339 of ``t`` in ``zone``: ``Z`` for UTC, else the offset."""
    local = t.astimezone(zone)
    text = local.strftime("%Y-%m-%dT%H:%M:%S")
    offset = local.utcoffset() or timedelta(0)
    if zone is UTC or (offset == timedelta(0) and getattr(zone, "key", "UTC") == "UTC"):
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def rfc1123z(t: datetime) -> str:
    """Go's time.RFC1123Z in UTC (MissSchedule's message), without the locale's say."""
    u = t.astimezone(UTC)
    return f"{_DAYS[u.weekday()]}, {u.day:02d} {_MONTHS[u.month - 1]} {u.year} {u:%H:%M:%S} +0000"


def job_name(cronjob: str, scheduled: datetime) -> str:
    """getJobName: the minutes since the epoch (the controller's granularity is a minute)."""
    return f"{cronjob}-{int(scheduled.timestamp()) // 60}"


def finished(job: Mapping[str, Any]) -> str:
    """Complete or Failed when the Job has that condition True, else ""."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"])
    return ""


@dataclass(frozen=True, slots=True)
class Recent:
    """mostRecentScheduleTime's answer."""

    earliest: datetime
    most_recent: datetime | None
    missed: str
    error: str = ""


def most_recent_schedule_time(cronjob: Mapping[str, Any], now: datetime, schedule: Schedule,
                              include_deadline: bool) -> Recent:
    """The last schedule time (or the creation time), the latest time a Job should have started by
    ``now`` (None if none is due), and how many were missed, computed as upstream does: from the
    interval between two schedule times, so a controller down for years does not walk each one."""
    spec, status = cronjob.get("spec") or {}, cronjob.get("status") or {}
    earliest = parse_time(status.get("lastScheduleTime")) or \
        parse_time((cronjob.get("metadata") or {}).get("creationTimestamp")) or now
    deadline = spec.get("startingDeadlineSeconds")
    if include_deadline and deadline is not None:
        scheduling_deadline = now - timedelta(seconds=int(deadline))
        if scheduling_deadline > earliest:
            earliest = scheduling_deadline
    t1 = schedule.next(earliest)
    t2 = schedule.next(t1)
    if now < t1:
        return Recent(earliest, None, NONE_MISSED)
    if now < t2:
        return Recent(earliest, t1, NONE_MISSED)
    between = round((t2 - t1).total_seconds())
    if between < 1:
        return Recent(earliest, None, NONE_MISSED, "time difference between two schedules is less than 1 second")
    elapsed = int((now - t1).total_seconds())
    missed_count = elapsed // between + 1
    # One interval before the estimate, then the schedule itself finds the exact latest time (irregular
    # schedules such as "30 6-16/4 * * 1-5" have no constant interval).
    t = schedule.next(t1 + timedelta(seconds=(missed_count - 2) * between))
    most_recent: datetime | None = None
    while t <= now:
        most_recent = t
        t = schedule.next(t)
    missed = MANY_MISSED if missed_count > 100 else FEW_MISSED if missed_count > 0 else NONE_MISSED
    return Recent(earliest, most_recent, missed)


def next_schedule_delay(cronjob: Mapping[str, Any], now: datetime, schedule: Schedule) -> float:
    """nextScheduleTimeDuration: seconds until the next schedule time after the last one handled."""
    recent = most_recent_schedule_time(cronjob, now, schedule, False)
    if recent.error:
        base = now
    elif recent.most_recent is None:
        base = recent.earliest if recent.missed == NONE_MISSED else now
    else:
        base = recent.most_recent
    return (schedule.next(base) - now).total_seconds() + NEXT_SCHEDULE_DELTA


def job_from_template(cronjob: Mapping[str, Any], scheduled: datetime, zone: tzinfo) -> dict[str, Any]:
    """getJobFromTemplate2: the template's labels, annotations and spec, the scheduled-timestamp
    annotation (in the CronJob's zone), the deterministic name and the controller reference."""
    meta = cronjob.get("metadata") or {}
    template = (cronjob.get("spec") or {}).get("jobTemplate") or {}
    template_meta = template.get("metadata") or {}
    annotations = dict(template_meta.get("annotations") or {})
    annotations[SCHEDULED_TIMESTAMP] = rfc3339(scheduled, zone)
    job_meta: dict[str, Any] = {"name": job_name(str(meta.get("name") or ""), scheduled),
                                "namespace": meta.get("namespace") or "default"}
    if template_meta.get("labels"):
        job_meta["labels"] = dict(template_meta["labels"])
    job_meta["annotations"] = annotations
    job_meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "CronJob", "name": meta.get("name"),
                                    "uid": meta.get("uid"), "controller": True, "blockOwnerDeletion": True}]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta,
            "spec": json_copy(template.get("spec") or {})}


def job_ref(job: Mapping[str, Any]) -> dict[str, Any]:
    """An ObjectReference to the Job, in Go's field order (status.active's items)."""
    meta = job.get("metadata") or {}
    return {"kind": "Job", "namespace": meta.get("namespace"), "name": meta.get("name"), "uid": meta.get("uid"),
            "apiVersion": "batch/v1", "resourceVersion": meta.get("resourceVersion")}


def _clock_offset() -> float:
    raw = os.environ.get(CLOCK_OFFSET_ENV, "")
    try:
        return float(raw) if raw else 0.0
    except ValueError:
        log.warning("%s=%r is not a number of seconds: ignored", CLOCK_OFFSET_ENV, raw)
        return 0.0


class CronJobController(Controller):
    name = COMPONENT

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        offset = timedelta(seconds=_clock_offset())
        # Upstream's ``jm.now``: replaced by unit tests to drive the schedule.
        self.now: Callable[[], datetime] = lambda: datetime.now(UTC) + offset
        self._written: dict[Key, Any] = {}  # the status this controller last wrote, to skip its own echo
        self._recorded: dict[tuple[str, str, str, str], tuple[Key, datetime]] = {}

    # --- what wakes a CronJob -------------------------------------------------------------

    def handle(self, change: Change) -> Iterable[Key]:
        if change.kind == "CronJob":
            key = key_of("CronJob", change.obj)
            if change.type == "DELETED":
                self._written.pop(key, None)
                return []
            if change.new is not None and change.old is not None and \
                    _without_status(change.new) == _without_status(change.old) and \
                    (change.new.get("status") or {}) == self._written.get(key):
                return []  # the echo of this controller's own status write
            return [key]
        if change.kind != "Job":
            return []
        keys: list[Key] = []
        for body in (change.old, change.new):
            ref = controller_ref(body) if body is not None else None
            if ref is not None and ref.get("kind") == "CronJob":
                key = self.informer.by_uid(str(ref.get("uid")))
                if key is not None and key not in keys:
                    keys.append(key)
        return keys

    def resync(self) -> Iterable[Key]:
        return self.informer.keys("CronJob")

    # --- one CronJob ----------------------------------------------------------------------

    def sync(self, key: Key) -> None:
        body = self.informer.get(key)
        if body is None or being_deleted(body):
            return
        now = self.now()
        jobs = [job for k in self.informer.owned(body, "Job") if (job := self.informer.get(k)) is not None]
        cronjob = json_copy(body)
        cronjob.setdefault("status", {})
        batch = self.batch()
        self.cleanup_finished_jobs(cronjob, jobs, batch, now)
        delay = self.sync_cronjob(cronjob, jobs, batch, now)
        status = {k: v for k, v in cronjob["status"].items() if v not in (None, [])}
        if status != (body.get("status") or {}):
            self._written[key] = status
            batch.put_status(key, {**body, "status": status})
        batch.commit()
        if delay is not None:
            self.ctx.enqueue_after(self, key, max(0.0, delay))

    def cleanup_finished_jobs(self, cronjob: dict[str, Any], jobs: list[dict[str, Any]], batch: Batch,
                              now: datetime) -> None:
        """cleanupFinishedJobs: the oldest finished Jobs beyond each history limit are deleted."""
        spec = cronjob.get("spec") or {}
        for kind, limit_field in (("Complete", "successfulJobsHistoryLimit"), ("Failed", "failedJobsHistoryLimit")):
            limit = spec.get(limit_field)
            if limit is None:
                continue
            done = sorted((j for j in jobs if finished(j) == kind), key=_by_start_time)
            for job in done[:max(0, len(done) - int(limit))]:
                self.delete_job(cronjob, job, batch, now)

    def delete_job(self, cronjob: dict[str, Any], job: Mapping[str, Any], batch: Batch, now: datetime) -> None:
        """deleteJob: the Job (its pods follow by garbage collection), its reference in status.active."""
        batch.delete(key_of("Job", job))
        _drop_active(cronjob, str((job.get("metadata") or {}).get("uid")))
        self.event(batch, cronjob, "SuccessfulDelete", f"Deleted job {job['metadata']['name']}", now)

    def sync_cronjob(self, cronjob: dict[str, Any], jobs: list[dict[str, Any]], batch: Batch,
                     now: datetime) -> float | None:
        """syncCronJob: reconcile status.active with the Jobs, then start the run that is due, if any.
        Returns the seconds until the CronJob should be looked at again (None: only when it changes)."""
        spec, status, meta = cronjob.get("spec") or {}, cronjob["status"], cronjob["metadata"]
        active_uids = {str(ref.get("uid")) for ref in status.get("active") or []}
        for job in jobs:
            uid = str(job["metadata"].get("uid"))
            end = finished(job)
            if uid not in active_uids and not end:
                self.event(batch, cronjob, "UnexpectedJob",
                           f"Saw a job that the controller did not create or forgot: {job['metadata']['name']}", now,
                           type_="Warning")
            elif end:
                if uid in active_uids:
                    _drop_active(cronjob, uid)
                    self.event(batch, cronjob, "SawCompletedJob",
                               f"Saw completed job: {job['metadata']['name']}, condition: {end}", now)
                if end == "Complete":
                    completed = parse_time((job.get("status") or {}).get("completionTime"))
                    last = parse_time(status.get("lastSuccessfulTime"))
                    if completed is not None and (last is None or completed > last):
                        status["lastSuccessfulTime"] = rfc3339(completed)
        children = {str(j["metadata"].get("uid")) for j in jobs}
        for ref in list(status.get("active") or []):
            if str(ref.get("uid")) in children:
                continue
            stored = self.store.get(("Job", str(ref.get("namespace") or ""), str(ref.get("name") or "")))
            if stored is None:
                self.event(batch, cronjob, "MissingJob", f"Active job went missing: {ref.get('name')}", now)
                _drop_active(cronjob, str(ref.get("uid")))
        if meta.get("deletionTimestamp"):
            return None
        zone_name = spec.get("timeZone")
        try:
            zone = load_zone(str(zone_name)) if zone_name is not None else UTC
        except ScheduleError as exc:
            self.event(batch, cronjob, "UnknownTimeZone", f'invalid timeZone: "{zone_name}": {exc}', now,
                       type_="Warning")
            return None
        if spec.get("suspend"):
            return None
        schedule_text = str(spec.get("schedule") or "")
        if "TZ" in schedule_text:
            self.event(batch, cronjob, "UnsupportedSchedule",
                       f'CRON_TZ or TZ used in schedule "{schedule_text}" is not officially supported, see '
                       "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", now,
                       type_="Warning")
        try:
            schedule = parse(schedule_text, zone)
        except ScheduleError as exc:
            self.event(batch, cronjob, "UnparseableSchedule", f'unparseable schedule: "{schedule_text}" : {exc}', now,
                       type_="Warning")
            return None
        recent = most_recent_schedule_time(cronjob, now, schedule, True)
        scheduled = recent.most_recent if recent.most_recent is not None and recent.most_recent <= now else None
        if scheduled is not None and recent.missed == MANY_MISSED:
            self.event(batch, cronjob, "TooManyMissedTimes", "too many missed start times. Set or decrease "
                       ".spec.startingDeadlineSeconds or check clock skew", now, type_="Warning")
        if recent.error:
            self.event(batch, cronjob, "InvalidSchedule", f"invalid schedule: {schedule_text} : {recent.error}", now,
                       type_="Warning")
            return None
        if scheduled is None:
            return next_schedule_delay(cronjob, now, schedule)
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + timedelta(seconds=int(deadline)) < now:
            self.event(batch, cronjob, "MissSchedule", f"Missed scheduled time to start a job: {rfc1123z(scheduled)}",
                       now, type_="Warning")
            return next_schedule_delay(cronjob, now, schedule)
        name = job_name(str(meta["name"]), scheduled)
        if any(ref.get("name") == name for ref in status.get("active") or []) or \
                parse_time(status.get("lastScheduleTime")) == scheduled:
            return next_schedule_delay(cronjob, now, schedule)
        policy = spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and status.get("active"):
            self.event(batch, cronjob, "JobAlreadyActive",
                       "Not starting job because prior execution is running and concurrency policy is Forbid", now)
            return next_schedule_delay(cronjob, now, schedule)
        if policy == "Replace":
            for ref in list(status.get("active") or []):
                running = self.store.get(("Job", str(ref.get("namespace") or ""), str(ref.get("name") or "")))
                if running is None:
                    self.event(batch, cronjob, "FailedGet", f'Get job: jobs.batch "{ref.get("name")}" not found', now,
                               type_="Warning")
                    return RETRY_AFTER
                self.delete_job(cronjob, running.body, batch, now)
        created = self.create_job(cronjob, job_from_template(cronjob, scheduled, zone), batch, now)
        if created is None:
            return RETRY_AFTER
        if not created:
            return None
        status.setdefault("active", []).append(job_ref(created))
        status["lastScheduleTime"] = rfc3339(scheduled)
        return next_schedule_delay(cronjob, now, schedule)

    def create_job(self, cronjob: dict[str, Any], job: dict[str, Any], batch: Batch,
                   now: datetime) -> dict[str, Any] | None:
        """CreateJob through the API. The Job made, or {} when a Job of that name exists that this
        CronJob does not control (someone else's: left alone), or None when the create failed."""
        registry = self.ctx.registry
        if registry is None:
            return None
        namespace = job["metadata"]["namespace"]
        try:
            made = registry.create(Target(BY_KIND["Job"], namespace, "", ""), job, AS_CONTROLLER).obj
        except ApiError as exc:
            if exc.reason != "AlreadyExists":
                self.event(batch, cronjob, "FailedCreate", f"Error creating job: {exc.message}", now,
                           type_="Warning")
                return None
            stored = self.store.get(("Job", namespace, job["metadata"]["name"]))
            if stored is None:
                return None
            ref = controller_ref(stored.body)
            if ref is None or str(ref.get("uid")) != str(cronjob["metadata"].get("uid")):
                return {}
            if any(str(r.get("uid")) == str(stored.body["metadata"].get("uid"))
                   for r in cronjob["status"].get("active") or []):
                return {}
            return stored.body
        self.event(batch, cronjob, "SuccessfulCreate", f"Created job {made['metadata']['name']}", now)
        return made

    def event(self, batch: Batch, cronjob: Mapping[str, Any], reason: str, message: str, now: datetime, *,
              type_: str = "Normal") -> None:
        """Record an event; a repeat within the correlator's window counts on the first one (x2, x3...)."""
        uid = str(cronjob["metadata"].get("uid"))
        memo = (uid, reason, message, type_)
        previous = self._recorded.get(memo)
        if previous is not None and now - previous[1] < AGGREGATE_WINDOW:
            stored = self.store.get(previous[0])
            if stored is not None:
                again = json_copy(stored.body)
                again["count"] = int(again.get("count") or 1) + 1
                again["lastTimestamp"] = batch.now
                batch.writes.append(Write(previous[0], again, "controller"))
                return
        before = len(batch.writes)
        batch.event(cronjob, reason, message, COMPONENT, type_=type_)
        if len(self._recorded) > 1024:  # bounded: what is past the window can no longer be folded into
            self._recorded = {m: v for m, v in self._recorded.items() if now - v[1] < AGGREGATE_WINDOW}
        self._recorded[memo] = (batch.writes[before].key, now)


def _without_status(body: Mapping[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in (body.get("metadata") or {}).items() if k not in SERVER_BOOKKEEPING}
    return {**{k: v for k, v in body.items() if k != "status"}, "metadata": meta}


def _drop_active(cronjob: dict[str, Any], uid: str) -> None:
    status = cronjob["status"]
    status["active"] = [ref for ref in status.get("active") or [] if str(ref.get("uid")) != uid]


def _by_start_time(job: Mapping[str, Any]) -> tuple[int, str, str]:
    """byJobStartTime: by status.startTime (Jobs without one last), then by name."""
    start = (job.get("status") or {}).get("startTime")
    return (0 if start else 1, str(start or ""), str((job.get("metadata") or {}).get("name") or ""))
