"""Offline, a CronJob in the manifests is admitted as the API server admits it and listed with
kubectl's columns; it is not run (a manifest has no clock: the live cluster's controller runs it)."""

from __future__ import annotations

from tests.helpers import knetsim

TICK = """\
apiVersion: v1
kind: Namespace
metadata:
  name: batch
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: tick
  namespace: batch
spec:
  schedule: "*/5 * * * *"
  timeZone: Europe/Berlin
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: tick
            image: busybox:1.36
            command: [date]
"""


def run(*args: str, input: str):
    return knetsim(*args, input=input)


def test_a_cronjob_in_manifests_is_listed_with_kubectls_columns() -> None:
    result = run("get", "cj", "-f", "-", "-A", "-o", "wide", input=TICK)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()  # no "not simulated" warning: at one instant a CronJob is all there is
    assert lines[0].split() == ["NAMESPACE", "NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE",
                                "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert lines[1].split() == ["batch", "tick", "*/5", "*", "*", "*", "*", "Europe/Berlin", "False", "0", "<none>",
                                "<unknown>", "tick", "busybox:1.36", "<none>"]


def test_a_bad_schedule_is_refused_naming_the_file_object_and_field() -> None:
    result = run("get", "cronjobs", "-f", "-", "-A", "--strict", input=TICK.replace('"*/5 * * * *"', '"*/5 * *"'))
    assert result.exit_code == 2
    assert 'error: -, document 2: CronJob batch/tick: spec.schedule: Invalid value: "*/5 * *": expected ' \
           "exactly 5 fields, found 3: [*/5 * *]" in result.output
