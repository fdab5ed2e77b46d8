"""CronJob schedules as Kubernetes reads them: robfig/cron v3's ``ParseStandard`` and Go's time zones.

The API server validates ``spec.schedule`` with ``cron.ParseStandard`` and puts the parser's error in
its 422 (``spec.schedule: Invalid value: "bad": expected exactly 5 fields, found 1: [bad]``), so the
syntax check here follows robfig/cron v3's ``parser.go`` step by step for its messages: five fields
(minute hour day-of-month month day-of-week), ``*`` and ``?``, lists, ranges, ``N/step`` meaning
``N-max/step``, month and weekday names, the ``@hourly``..``@yearly`` descriptors and ``@every
<duration>``. What is accepted is then rendered as plain numbers and evaluated by croniter (the
maintained Python cron iterator, MIT): both agree on these forms, including robfig's rule that a
restricted day-of-month and a restricted day-of-week match either (``*/2`` restricts, ``*`` does not).

Times without ``spec.timeZone`` are UTC: robfig uses kube-controller-manager's local zone, which is
UTC in kind and in the usual control-plane images. Zones are the IANA database's (``zoneinfo``,
with the ``tzdata`` package where the system has none), as kube-apiserver embeds Go's copy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo


class ScheduleError(ValueError):
    """A schedule robfig/cron refuses, with its message."""


@dataclass(frozen=True, slots=True)
class _Bounds:
    low: int
    high: int
    names: tuple[tuple[str, int], ...] = ()


_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_FIELDS = (
    _Bounds(0, 59), _Bounds(0, 23), _Bounds(1, 31),
    _Bounds(1, 12, tuple((n, i + 1) for i, n in enumerate(_MONTH_NAMES))),
    _Bounds(0, 6, tuple((n, i) for i, n in enumerate(_DAY_NAMES))),
)
# parseDescriptor's fixed schedules (second 0 dropped: the standard parser has no seconds field).
_DESCRIPTORS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
                "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_EVERY = "@every "


def _go_atoi(text: str) -> int:
    """strconv.Atoi with its error text: an optional sign, then decimal digits only."""
    if re.fullmatch(r"[+-]?[0-9]+", text) is None:
        raise ScheduleError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    value = int(text)
    if not -(2 ** 63) <= value < 2 ** 63:
        raise ScheduleError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": value out of range')
    return value


def _must_parse_int(text: str) -> int:
    value = _go_atoi(text)
    if value < 0:
        raise ScheduleError(f"negative number ({value}) not allowed: {text}")
    return value


def _int_or_name(text: str, bounds: _Bounds) -> int:
    for name, value in bounds.names:
        if text.lower() == name:
            return value
    return _must_parse_int(text)


def _range(expr: str, bounds: _Bounds) -> tuple[set[int], bool]:
    """getRange: the values of ``number | number "-" number ["/" number]`` (or ``*``/``?``) and whether
    it is a star (robfig's starBit, cleared by a step above 1)."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    star = low_and_high[0] in ("*", "?")
    if star:
        start, end = bounds.low, bounds.high
    else:
        start = _int_or_name(low_and_high[0], bounds)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds)
        else:
            raise ScheduleError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _must_parse_int(range_and_step[1])
        if len(low_and_high) == 1:
            end = bounds.high  # "N/step" means "N-max/step"
        if step > 1:
            star = False
    else:
        raise ScheduleError(f"too many slashes: {expr}")
    if start < bounds.low:
        raise ScheduleError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise ScheduleError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expr}")
    return set(range(start, end + 1, step)), star


def _field(text: str, bounds: _Bounds) -> str:
    """getField (a comma-separated list of ranges) rendered as croniter reads it: ``*`` or numbers."""
    values: set[int] = set()
    star = False
    for expr in (part for part in text.split(",") if part):  # strings.FieldsFunc drops empty parts
        got, is_star = _range(expr, bounds)
        values |= got
        star = star or is_star
    if star:
        return "*"
    return ",".join(str(v) for v in sorted(values)) if values else ""


_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _go_duration(text: str) -> float:
    """time.ParseDuration in seconds, with its error messages."""
    quoted = f'"{text}"'
    rest, sign = text, 1.0
    if rest[:1] in ("+", "-"):
        sign = -1.0 if rest[0] == "-" else 1.0
        rest = rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        raise ScheduleError(f"time: invalid duration {quoted}")
    total = 0.0
    while rest:
        m = re.match(r"([0-9]*)(\.[0-9]*)?", rest)
        number = m.group(0) if m else ""
        if number in ("", ".") or not re.search(r"[0-9]", number):
            raise ScheduleError(f"time: invalid duration {quoted}")
        rest = rest[len(number):]
        unit = re.match(r"[^0-9.]*", rest).group(0)  # type: ignore[union-attr]
        if not unit:
            raise ScheduleError(f"time: missing unit in duration {quoted}")
        if unit not in _GO_UNITS:
            raise ScheduleError(f'time: unknown unit "{unit}" in duration {quoted}')
        total += float(number) * _GO_UNITS[unit]
        rest = rest[len(unit):]
    return sign * total


def load_zone(name: str) -> tzinfo:
    """time.LoadLocation: "" and "UTC" are UTC, "Local" the process's zone (UTC, as in kind's control
    plane); otherwise the IANA name, or Go's error text."""
    if name in ("", "UTC", "Local"):
        return UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # only a CronJob with a timeZone reads the database

    try:
        if name.startswith("/") or ".." in name.split("/"):
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleError(f"unknown time zone {name}") from None


# What robfig's Next returns when nothing matches (Go's zero time): "0 0 30 2 *", or an empty list.
NEVER = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Schedule:
    """A parsed schedule: ``next(t)`` is robfig's ``Schedule.Next``, the first activation after ``t``
    (``NEVER`` if there is none)."""

    fields: str = ""  # five numeric fields for croniter; "" for @every (or for a list that sets nothing)
    every: float = 0.0  # seconds, for @every
    zone: tzinfo = UTC

    def next(self, after: datetime) -> datetime:
        if not self.fields:
            if not self.every:
                return NEVER
            # ConstantDelaySchedule: whole seconds, at least one; counted from ``after`` truncated to the second.
            delay = max(1, int(self.every))
            return after.replace(microsecond=0) + timedelta(seconds=delay)
        from croniter import CroniterError, croniter  # only the controller evaluates; validation never does

        try:
            return croniter(self.fields, after.astimezone(self.zone)).get_next(datetime).astimezone(UTC)
        except (CroniterError, OverflowError):
            return NEVER


def parse(schedule: str, zone: tzinfo = UTC) -> Schedule:
    """cron.ParseStandard (five fields or a descriptor, with an optional ``TZ=``/``CRON_TZ=`` prefix);
    raises ScheduleError with robfig's message."""
    if not schedule:
        raise ScheduleError("empty spec string")
    spec = schedule
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        name = spec[spec.index("=") + 1: space if space >= 0 else len(spec) - 1]
        try:
            zone = load_zone(name)
        except ScheduleError as exc:
            raise ScheduleError(f"provided bad location {name}: {exc}") from None
        spec = spec[space:].strip() if space >= 0 else ""
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return Schedule(_DESCRIPTORS[spec], zone=zone)
        if spec.startswith(_EVERY):
            try:
                every = _go_duration(spec[len(_EVERY):])
            except ScheduleError as exc:
                raise ScheduleError(f"failed to parse duration {spec}: {exc}") from None
            return Schedule(every=every, zone=zone)
        raise ScheduleError(f"unrecognized descriptor: {spec}")
    fields = spec.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    rendered = [_field(text, bounds) for text, bounds in zip(fields, _FIELDS, strict=True)]
    if any(not r for r in rendered):
        return Schedule(zone=zone)  # an empty list (",") sets no bit: robfig accepts it, and it never fires
    return Schedule(" ".join(rendered), zone=zone)


def schedule_error(schedule: str) -> str | None:
    """robfig's message for a schedule it refuses, or None."""
    try:
        parse(schedule)
    except ScheduleError as exc:
        return str(exc)
    return None
