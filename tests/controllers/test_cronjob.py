"""The CronJob controller in process, its clock injected: the Jobs it makes at schedule times, their
names and annotations, the CronJob's status, concurrencyPolicy, suspend, startingDeadlineSeconds,
the history limits, and the events with kube-controller-manager's words.

Each scenario creates a CronJob (the server stamps its creationTimestamp), then sets the controller's
clock relative to it and queues the CronJob as its timer would (``tick``): no test waits for a minute.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.apiserver.inprocess import Cluster, run

from knetsim.apiserver.errors import ApiError
from knetsim.apiserver.store import Write
from knetsim.controllers.cronjob import (
    CronJobController,
    job_name,
    most_recent_schedule_time,
    next_schedule_delay,
    rfc3339,
)
from knetsim.model import cron

T0 = datetime(2026, 12, 3, 12, 30, 20, tzinfo=UTC)


def cronjob(name: str = "tick", schedule: str = "*/1 * * * *", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": schedule, **spec,
                     "jobTemplate": {"metadata": {"labels": {"app": name}},
                                     "spec": {"template": {"spec": {
                                         "restartPolicy": "OnFailure",
                                         "containers": [{"name": name, "image": "busybox:1.36",
                                                         "command": ["date"]}]}}}}}}


# --- the schedule arithmetic, a pure function of the CronJob and the time ------------------------

def _at(created: datetime, last: datetime | None = None, deadline: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"creationTimestamp": rfc3339(created)}, "spec": {}, "status": {}}
    if last is not None:
        body["status"]["lastScheduleTime"] = rfc3339(last)
    if deadline is not None:
        body["spec"]["startingDeadlineSeconds"] = deadline
    return body


def test_nothing_is_due_before_the_first_time_after_creation() -> None:
    every_minute = cron.parse("*/1 * * * *")
    recent = most_recent_schedule_time(_at(T0), T0 + timedelta(seconds=30), every_minute, True)
    assert recent.most_recent is None
    # The wake-up is the next minute plus upstream's 100 ms: 12:31:00.1 seen from 12:30:50.
    assert next_schedule_delay(_at(T0), T0 + timedelta(seconds=30), every_minute) == pytest.approx(10.1)


def test_the_latest_missed_time_is_due_and_many_missed_are_counted() -> None:
    hourly = cron.parse("0 * * * *")
    now = T0 + timedelta(hours=3, minutes=5)
    recent = most_recent_schedule_time(_at(T0), now, hourly, True)
    assert (recent.most_recent, recent.missed) == (datetime(2026, 12, 3, 15, tzinfo=UTC), "few")
    long_ago = most_recent_schedule_time(_at(T0), T0 + timedelta(days=10), hourly, True)
    assert long_ago.missed == "many" and long_ago.most_recent == datetime(2026, 12, 13, 12, tzinfo=UTC)
    # startingDeadlineSeconds: nothing older than the deadline is looked at.
    tight = most_recent_schedule_time(_at(T0, deadline=60), now, hourly, True)
    assert tight.most_recent is None
    # A schedule without a next time is an error, as upstream's "less than 1 second".
    assert most_recent_schedule_time(_at(T0), now, cron.parse("0 0 30 2 *"), True).error == \
        "time difference between two schedules is less than 1 second"


def test_job_names_are_minutes_since_the_epoch() -> None:
    # $(( $(date -u -d "2026-12-03 12:31" +%s) / 60 ))
    assert job_name("tick", datetime(2026, 12, 3, 12, 31, tzinfo=UTC)) == "tick-29938351"
    assert rfc3339(datetime(2026, 12, 3, 12, 31, tzinfo=UTC), cron.load_zone("Europe/Berlin")) == \
        "2026-12-03T13:31:00+01:00"


# --- the controller ---------------------------------------------------------------------------------

class Clock:
    def __init__(self, c: Cluster) -> None:
        self.c = c
        self.ctl = next(ctl for ctl in c.manager.controllers if isinstance(ctl, CronJobController))
        self.at = datetime.now(UTC)
        self.ctl.now = lambda: self.at

    def created(self, name: str = "tick") -> datetime:
        return datetime.fromisoformat(self.c.objects("CronJob")[name]["metadata"]["creationTimestamp"])

    async def tick(self, at: datetime, name: str = "tick") -> None:
        self.at = at
        self.c.manager.enqueue(self.ctl, ("CronJob", "default", name))
        await self.c.server.settle()


def next_minute(t: datetime) -> datetime:
    return t.replace(second=0, microsecond=0) + timedelta(minutes=1)


def finish(c: Cluster, name: str, condition: str = "Complete", at: datetime | None = None) -> None:
    stored = c.server.store.get(("Job", "default", name))
    assert stored is not None
    body = json.loads(json.dumps(stored.body))
    stamp = rfc3339(at or datetime.now(UTC))
    body["status"] = {"startTime": body.get("status", {}).get("startTime", stamp), "conditions": [
        {"type": condition, "status": "True", "lastProbeTime": stamp, "lastTransitionTime": stamp}]}
    if condition == "Complete":
        body["status"]["completionTime"] = stamp
    c.server.store.commit([Write(("Job", "default", name), body)])


def messages(c: Cluster, reason: str) -> list[str]:
    return [e["message"] for e in c.events(reason) if e["involvedObject"]["kind"] == "CronJob"]


def test_a_job_at_the_schedule_time_named_annotated_and_owned(tmp_path: Path) -> None:
    async def scenario(c: Cluster) -> None:
        c.create(cronjob())
        clock = Clock(c)
        t1 = next_minute(clock.created())
        await clock.tick(t1 - timedelta(seconds=1))
        assert c.objects("Job") == {}
        await clock.tick(t1 + timedelta(seconds=1))
        name = job_name("tick", t1)
        job = c.objects("Job")[name]
        cj = c.objects("CronJob")["tick"]
        assert job["metadata"]["annotations"] == {"batch.kubernetes.io/cronjob-scheduled-timestamp": rfc3339(t1)}
        assert job["metadata"]["labels"] == {"app": "tick"}
        assert job["metadata"]["ownerReferences"] == [{
            "apiVersion": "batch/v1", "kind": "CronJob", "name": "tick", "uid": cj["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]
        assert job["spec"]["backoffLimit"] == 6  # created through the API: the Job defaults apply
        assert [(r["kind"], r["name"], r["uid"]) for r in cj["status"]["active"]] == [
            ("Job", name, job["metadata"]["uid"])]
        assert cj["status"]["lastScheduleTime"] == rfc3339(t1)
        assert messages(c, "SuccessfulCreate") == [f"Created job {name}"]
        # Looking again at the same time makes nothing more.
        await clock.tick(t1 + timedelta(seconds=2))
        assert list(c.objects("Job")) == [name]

        finish(c, name)
        await c.server.settle()
        cj = c.objects("CronJob")["tick"]
        assert "active" not in cj["status"]
        assert cj["status"]["lastSuccessfulTime"] == c.objects("Job")[name]["status"]["completionTime"]
        assert messages(c, "SawCompletedJob") == [f"Saw completed job: {name}, condition: Complete"]
    run(tmp_path, scenario)


@pytest.mark.parametrize("policy", ["Allow", "Forbid", "Replace"])
def test_concurrency_policy_when_the_last_run_is_still_active(tmp_path: Path, policy: str) -> None:
    async def scenario(c: Cluster) -> None:
        c.create(cronjob(concurrencyPolicy=policy))
        clock = Clock(c)
        t1 = next_minute(clock.created())
        t2 = t1 + timedelta(minutes=1)
        await clock.tick(t1 + timedelta(seconds=1))
        await clock.tick(t2 + timedelta(seconds=1))
        first, second = job_name("tick", t1), job_name("tick", t2)
        active = [r["name"] for r in c.objects("CronJob")["tick"]["status"]["active"]]
        if policy == "Allow":
            assert sorted(c.objects("Job")) == [first, second] and active == [first, second]
        elif policy == "Forbid":
            assert list(c.objects("Job")) == [first] and active == [first]
            assert messages(c, "JobAlreadyActive") == [
                "Not starting job because prior execution is running and concurrency policy is Forbid"]
        else:
            assert list(c.objects("Job")) == [second] and active == [second]
            assert messages(c, "SuccessfulDelete") == [f"Deleted job {first}"]
    run(tmp_path, scenario)


def test_suspend_stops_new_jobs_and_resuming_starts_the_missed_run(tmp_path: Path) -> None:
    async def scenario(c: Cluster) -> None:
        c.create(cronjob(suspend=True))
        clock = Clock(c)
        t1 = next_minute(clock.created())
        await clock.tick(t1 + timedelta(seconds=5))
        assert c.objects("Job") == {}
        clock.at = t1 + timedelta(seconds=6)
        c.update("CronJob", "tick", lambda body: body["spec"].update(suspend=False))
        await c.server.settle()
        assert list(c.objects("Job")) == [job_name("tick", t1)]
    run(tmp_path, scenario)


def test_a_run_later_than_the_starting_deadline_is_missed(tmp_path: Path) -> None:
    async def scenario(c: Cluster) -> None:
        c.create(cronjob(startingDeadlineSeconds=10))
        clock = Clock(c)
        t1 = next_minute(clock.created())
        await clock.tick(t1 + timedelta(seconds=30))
        assert c.objects("Job") == {}
        # The deadline hides the missed time from the search, as upstream: no event, no Job, until the next.
        await clock.tick(t1 + timedelta(minutes=1, seconds=3))
        assert list(c.objects("Job")) == [job_name("tick", t1 + timedelta(minutes=1))]
    run(tmp_path, scenario)


def test_history_limits_delete_the_oldest_finished_jobs(tmp_path: Path) -> None:
    async def scenario(c: Cluster) -> None:
        c.create(cronjob(successfulJobsHistoryLimit=1, failedJobsHistoryLimit=0))
        clock = Clock(c)
        t1 = next_minute(clock.created())
        names = []
        for i in range(3):
            at = t1 + timedelta(minutes=i)
            await clock.tick(at + timedelta(seconds=1))
            names.append(job_name("tick", at))
            finish(c, names[-1], "Failed" if i == 2 else "Complete", at + timedelta(seconds=2))
            await c.server.settle()
        assert list(c.objects("Job")) == [names[1]]
        assert messages(c, "SuccessfulDelete") == [f"Deleted job {names[0]}", f"Deleted job {names[2]}"]
    run(tmp_path, scenario)


def test_a_job_made_by_hand_from_the_cronjob_is_unexpected_once(tmp_path: Path) -> None:
    async def scenario(c: Cluster) -> None:
        cj = c.create(cronjob(schedule="0 0 1 1 *"))
        Clock(c)
        manual = {"apiVersion": "batch/v1", "kind": "Job",
                  "metadata": {"name": "manual", "annotations": {"cronjob.kubernetes.io/instantiate": "manual"},
                               "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "tick",
                                                    "uid": cj["metadata"]["uid"], "controller": True}]},
                  "spec": cj["spec"]["jobTemplate"]["spec"]}
        c.create(manual)
        await c.server.settle()
        [event] = c.events("UnexpectedJob")
        assert (event["type"], event["message"]) == (
            "Warning", "Saw a job that the controller did not create or forgot: manual")
        finish(c, "manual")
        await c.server.settle()
        assert c.objects("CronJob")["tick"]["status"]["lastSuccessfulTime"]
        assert "lastScheduleTime" not in c.objects("CronJob")["tick"]["status"]
    run(tmp_path, scenario)


@pytest.mark.parametrize(("change", "message"), [
    ({"schedule": "0-70 * * * *"},
     'spec.schedule: Invalid value: "0-70 * * * *": end of range (70) above maximum (59): 0-70'),
    ({"schedule": "TZ=UTC 0 * * * *"},
     'spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field '
     'instead'),
    ({"timeZone": "Mars/Olympus"}, 'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus'),
    ({"timeZone": "Local"}, 'spec.timeZone: Invalid value: "Local": timeZone must be an explicit time zone as '
                            'defined in https://www.iana.org/time-zones'),
    ({"concurrencyPolicy": "Sometimes"},
     'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"'),
    ({"startingDeadlineSeconds": -1}, "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or "
                                      "equal to 0"),
])
def test_admission_refuses_with_the_api_servers_words(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    async def scenario(c: Cluster) -> None:
        body = cronjob()
        body["spec"].update(change)
        with pytest.raises(ApiError) as err:
            c.create(body)
        assert err.value.code == 422
        assert err.value.message == f'CronJob.batch "tick" is invalid: {message}'
    run(tmp_path, scenario)


def test_a_cronjob_is_defaulted_as_the_api_server_does(tmp_path: Path) -> None:
    async def scenario(c: Cluster) -> None:
        spec = c.create(cronjob())["spec"]
        assert (spec["concurrencyPolicy"], spec["suspend"], spec["successfulJobsHistoryLimit"],
                spec["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)
        assert "backoffLimit" not in spec["jobTemplate"]["spec"]
        assert spec["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
        with pytest.raises(ApiError) as err:
            c.create(cronjob(name="a" * 53))
        assert err.value.message.endswith(f'metadata.name: Invalid value: "{"a" * 53}": must be no more than 52 '
                                          "characters")
    run(tmp_path, scenario)


def test_an_active_job_deleted_by_hand_is_reported_missing(tmp_path: Path) -> None:
    async def scenario(c: Cluster) -> None:
        c.create(cronjob())
        clock = Clock(c)
        t1 = next_minute(clock.created())
        await clock.tick(t1 + timedelta(seconds=1))
        name = job_name("tick", t1)
        c.delete("Job", name)
        await c.server.settle()
        assert messages(c, "MissingJob") == [f"Active job went missing: {name}"]
        assert "active" not in c.objects("CronJob")["tick"]["status"]
        # The run is not made again: lastScheduleTime says it was.
        await clock.tick(t1 + timedelta(seconds=3))
        assert c.objects("Job") == {}
    run(tmp_path, scenario)
