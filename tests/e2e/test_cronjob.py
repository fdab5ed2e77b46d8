"""CronJobs with the real kubectl, as a CKAD learner types them (issue 13's CronJob gap).

Given `kubectl create cronjob`, then `kubectl get cronjob` shows kubectl's columns, `kubectl create
job --from=cronjob/...` runs a Job that completes and logs, a bad schedule is refused in the API
server's words, and `kubectl explain` knows the kind. The schedule itself is tested on a second
cluster whose CronJob controller clock runs 55 s ahead (the test hook KNETSIM_TEST_CRONJOB_CLOCK_OFFSET,
nothing else moves): a `*/1` CronJob gets its Job for the next minute within 5 s instead of up to 60,
and a suspended one gets none until it is resumed.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from .conftest import KUBECTL, Cluster, start, stop, wait_for

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live

AHEAD = 55  # seconds the second cluster's CronJob controller clock runs ahead
DOCS = Path(__file__).resolve().parents[2] / "docs" / "apiserver.md"


def created_at(k: Cluster, name: str) -> datetime:
    stamp = k.get_json("cronjob", name)["metadata"]["creationTimestamp"]
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def next_minute(t: datetime) -> datetime:
    return t.replace(second=0, microsecond=0) + timedelta(minutes=1)


def jobs(k: Cluster) -> list[str]:
    return sorted(j["metadata"]["name"] for j in k.get_json("jobs")["items"])


def test_create_cronjob_lists_with_kubectls_columns_and_a_job_from_it_runs(k: Cluster) -> None:
    k.sh("kubectl create cronjob tick --image=busybox:1.36 --schedule='0 0 1 1 *' -- date")
    lines = k.kubectl("get", "cronjob").stdout.splitlines()
    assert lines[0].split() == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    assert re.fullmatch(r"tick\s+0 0 1 1 \*\s+<none>\s+False\s+0\s+<none>\s+\d+s", lines[1]), lines[1]
    wide = k.kubectl("get", "cronjob", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide[1].split()[-3:] == ["tick", "busybox:1.36", "<none>"]

    assert k.sh("kubectl create job manual --from=cronjob/tick").stdout == "job.batch/manual created\n"
    k.kubectl("wait", "--for=condition=complete", "job/manual", "--timeout=20s")
    assert re.fullmatch(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d UTC \d{4}\n", k.kubectl("logs", "job/manual").stdout)
    job = k.get_json("job", "manual")
    cj = k.get_json("cronjob", "tick")
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    assert [(r["kind"], r["name"], r["uid"]) for r in job["metadata"]["ownerReferences"]] == [
        ("CronJob", "tick", cj["metadata"]["uid"])]
    # The controller did not start it: a Warning, and the CronJob's last schedule stays unset.
    events = k.get_json("events", "--field-selector", "involvedObject.name=tick")["items"]
    assert [(e["type"], e["reason"], e["message"]) for e in events][:1] == [
        ("Warning", "UnexpectedJob", "Saw a job that the controller did not create or forgot: manual")]
    assert wait_for(lambda: "lastSuccessfulTime" in k.get_json("cronjob", "tick")["status"])
    assert "lastScheduleTime" not in k.get_json("cronjob", "tick")["status"]

    # Deleting the CronJob takes its Jobs and their pods (owner references).
    k.kubectl("delete", "cronjob", "tick")
    assert wait_for(lambda: not jobs(k) and not k.get_json("pods")["items"])


def test_a_bad_schedule_or_zone_is_refused_in_the_api_servers_words(k: Cluster) -> None:
    out = k.sh("kubectl create cronjob bad --image=busybox:1.36 --schedule='* * *'", check=False)
    assert out.returncode == 1
    assert out.stderr == ('error: failed to create cronjob: CronJob.batch "bad" is invalid: spec.schedule: Invalid '
                          'value: "* * *": expected exactly 5 fields, found 3: [* * *]\n')
    manifest = k.sh("kubectl create cronjob bad --image=busybox:1.36 --schedule='0 9 * * *' "
                    "--dry-run=client -o json").stdout
    body = json.loads(manifest)
    body["spec"]["timeZone"] = "Europe/Atlantis"
    out = k.kubectl("apply", "-f", "-", input=json.dumps(body), check=False)
    assert out.returncode == 1
    assert 'spec.timeZone: Invalid value: "Europe/Atlantis": unknown time zone Europe/Atlantis' in out.stderr
    body["spec"]["timeZone"] = "Europe/Berlin"
    k.kubectl("apply", "-f", "-", input=json.dumps(body))
    assert k.kubectl("get", "cj", "bad", "-o", "jsonpath={.spec.timeZone}").stdout == "Europe/Berlin"


def test_explain_knows_the_cronjob_spec(k: Cluster) -> None:
    out = k.kubectl("explain", "cronjob.spec").stdout
    assert out.startswith("GROUP:      batch\nKIND:       CronJob\nVERSION:    v1\n")
    for field in ("concurrencyPolicy", "jobTemplate", "schedule", "startingDeadlineSeconds", "suspend", "timeZone"):
        assert re.search(rf"^  {field}\t", out, re.M), field


@pytest.fixture(scope="module")
def ahead(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A second cluster whose CronJob controller clock is AHEAD seconds ahead of the wall clock."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed: the end-to-end suite drives the real kubectl")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KNETSIM_TEST_CRONJOB_CLOCK_OFFSET", str(AHEAD))
        c = start(tmp_path_factory.mktemp("ahead"))
    try:
        yield c
    finally:
        stop(c)


@pytest.fixture
def a(ahead: Cluster) -> Iterator[Cluster]:
    try:
        yield ahead
    finally:
        ahead.cleanup()


def test_an_every_minute_schedule_makes_its_job_at_the_next_minute(a: Cluster) -> None:
    a.sh("kubectl create cronjob tick --image=busybox:1.36 --schedule='*/1 * * * *' -- date")
    t1 = next_minute(created_at(a, "tick"))
    name = f"tick-{int(t1.timestamp()) // 60}"
    # The controller's clock reaches t1 at most 60 - AHEAD seconds after the creation.
    assert wait_for(lambda: jobs(a) == [name], timeout=60 - AHEAD + 5), jobs(a)
    job = a.get_json("job", name)
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == \
        t1.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    a.kubectl("wait", "--for=condition=complete", f"job/{name}", "--timeout=20s")
    assert a.kubectl("logs", f"job/{name}").stdout.endswith("UTC " + str(datetime.now(UTC).year) + "\n")
    assert wait_for(lambda: "active" not in a.get_json("cronjob", "tick")["status"])
    status = a.get_json("cronjob", "tick")["status"]
    assert status["lastScheduleTime"] == t1.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert status["lastSuccessfulTime"] == a.get_json("job", name)["status"]["completionTime"]
    reasons = [(e["reason"], e["message"]) for e in
               a.get_json("events", "--field-selector", "involvedObject.name=tick")["items"]]
    assert reasons[:2] == [("SuccessfulCreate", f"Created job {name}"),
                           ("SawCompletedJob", f"Saw completed job: {name}, condition: Complete")]


def test_suspend_stops_new_jobs_until_resumed(a: Cluster) -> None:
    body = json.loads(a.sh("kubectl create cronjob tock --image=busybox:1.36 --schedule='*/1 * * * *' "
                           "--dry-run=client -o json -- date").stdout)
    body["spec"]["suspend"] = True
    a.kubectl("apply", "-f", "-", input=json.dumps(body))
    t1 = next_minute(created_at(a, "tock"))
    # Past t1 on the controller's clock (and a second more), nothing was started.
    time.sleep(max(0.0, (t1 - timedelta(seconds=AHEAD - 1) - datetime.now(UTC)).total_seconds()))
    assert jobs(a) == []
    assert a.kubectl("get", "cj", "tock", "-o", "jsonpath={.spec.suspend}").stdout == "true"
    # Resumed, the missed run starts at once, as kube-controller-manager starts the latest missed time.
    a.kubectl("patch", "cronjob", "tock", "-p", '{"spec":{"suspend":false}}')
    assert wait_for(lambda: jobs(a) == [f"tock-{int(t1.timestamp()) // 60}"], timeout=5), jobs(a)


def test_the_docs_transcript(k: Cluster) -> None:
    """docs/apiserver.md's CronJobs transcript, run as written (ages and dates may differ)."""
    block = DOCS.read_text().split("### CronJobs", 1)[1].split("```console\n", 1)[1].split("```", 1)[0]
    steps = re.split(r"^\$ ", block, flags=re.M)[1:]
    assert steps, "docs/apiserver.md has no CronJobs transcript"
    for step in steps:
        command, _, expected = step.partition("\n")
        out = k.sh(command).stdout
        assert _vary(out) == _vary(expected), f"$ {command}\n{out}"


def _vary(text: str) -> str:
    """Ages and dates vary from run to run."""
    text = re.sub(r"\b\d+(?:m\d*)?s\b", "AGE", text)
    text = re.sub(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d UTC \d{4}", "DATE", text)
    return re.sub(r" +", " ", text)
