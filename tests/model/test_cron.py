"""CronJob schedules as kube-apiserver validates them and kube-controller-manager evaluates them.

The messages are robfig/cron v3's (``ParseStandard``), which the API server puts in its 422 for
``spec.schedule``; the times are those robfig's ``Schedule.Next`` gives (UTC unless a zone is named).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from knetsim.model import cron

AT = datetime(2026, 12, 3, 12, 31, 0, tzinfo=UTC)  # a Thursday


@pytest.mark.parametrize(("schedule", "message"), [
    ("", "empty spec string"),
    ("bad", "expected exactly 5 fields, found 1: [bad]"),
    ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
    ("60 * * * *", "end of range (60) above maximum (59): 60"),
    ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("0 0 * * 7", "end of range (7) above maximum (6): 7"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("1/2/3 * * * *", "too many slashes: 1/2/3"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("0 0 * FOO *", 'failed to parse int from FOO: strconv.Atoi: parsing "FOO": invalid syntax'),
    ("@Hourly", "unrecognized descriptor: @Hourly"),
    ("@every 5", 'failed to parse duration @every 5: time: missing unit in duration "5"'),
    ("@every 2d", 'failed to parse duration @every 2d: time: unknown unit "d" in duration "2d"'),
])
def test_a_refused_schedule_gets_robfigs_message(schedule: str, message: str) -> None:
    assert cron.schedule_error(schedule) == message


@pytest.mark.parametrize(("schedule", "after", "expected"), [
    ("*/1 * * * *", AT, datetime(2026, 12, 3, 12, 32, tzinfo=UTC)),  # strictly after a matching time
    ("*/1 * * * *", AT.replace(second=59), datetime(2026, 12, 3, 12, 32, tzinfo=UTC)),
    ("5/10 * * * *", AT, datetime(2026, 12, 3, 12, 35, tzinfo=UTC)),  # "N/step" is "N-59/step"
    ("0 12 * jan-MAR sun", AT, datetime(2027, 1, 3, 12, tzinfo=UTC)),  # names, any case
    ("0 0 ? * MON", AT, datetime(2026, 12, 7, tzinfo=UTC)),
    # Both day fields restricted: either matches ("*/2" restricts: its step clears the star).
    ("0 0 */2 * 1", AT, datetime(2026, 12, 5, tzinfo=UTC)),
    ("0 0 * * 1", AT, datetime(2026, 12, 7, tzinfo=UTC)),  # a star day-of-month: only Mondays
    ("@hourly", AT, datetime(2026, 12, 3, 13, tzinfo=UTC)),
    ("@weekly", AT, datetime(2026, 12, 6, tzinfo=UTC)),
    ("@every 90s", AT.replace(microsecond=500), datetime(2026, 12, 3, 12, 32, 30, tzinfo=UTC)),
    ("0 0 30 2 *", AT, cron.NEVER),  # no such day: robfig's zero time
])
def test_next_activation(schedule: str, after: datetime, expected: datetime) -> None:
    assert cron.parse(schedule).next(after) == expected


def test_a_time_zone_moves_the_activation_and_unknown_zones_are_named() -> None:
    berlin = cron.load_zone("Europe/Berlin")
    assert cron.parse("0 9 * * *", berlin).next(AT) == datetime(2026, 12, 4, 8, tzinfo=UTC)
    assert cron.parse("0 9 * * *").next(AT) == datetime(2026, 12, 4, 9, tzinfo=UTC)
    with pytest.raises(cron.ScheduleError, match=r"^unknown time zone Mars/Olympus$"):
        cron.load_zone("Mars/Olympus")
