"""Cron: a five-field cron expression, parsed here (no dependency), times in UTC."""

from __future__ import annotations

import calendar
import datetime
import math
from typing import List

#: The fields: name, lowest, highest.
_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
)
#: How far ahead a schedule must fire at least once (days): four years and a day
#: cover every date that exists (29 February).
_HORIZON = 4 * 366 + 1


def _field(text: str, name: str, low: int, high: int) -> List[int]:
    values: set[int] = set()
    for part in text.split(","):
        what, _, step_text = part.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) < 1:
                raise ValueError(f"cron {name} step must be a positive integer, got {part!r}")
            step = int(step_text)
        if what == "*":
            first, last = low, high
        else:
            a, dash, b = what.partition("-")
            if not a.isdigit() or (dash and not b.isdigit()):
                raise ValueError(
                    f"cron {name} must be *, a number, a range a-b, with an "
                    f"optional /step, or a list of those, got {part!r}"
                )
            first = int(a)
            last = int(b) if dash else (high if step_text else first)
        if not low <= first <= last <= high:
            raise ValueError(
                f"cron {name} must lie from {low} to {high} (and a range go upwards), got {part!r}"
            )
        values.update(range(first, last + 1, step))
    return sorted(values)


class Cron:
    """A cron expression of five fields, ``minute hour day-of-month month day-of-week``, in UTC.

    Each field is ``*``, a number, a range ``a-b``, any of those with a step
    (``*/15``, ``0-30/10``, ``5/20``: from 5 on), or a comma-separated list
    of them.  Day of week runs 0-7, Sunday being 0 and 7.  As in cron, a day
    matches when both day fields match, unless both are restricted (neither
    starts with ``*``): then either one matching is enough.  Times are UTC
    minutes; an expression that never fires (``0 0 30 2 *``) is refused.
    """

    __slots__ = ("expr", "minutes", "hours", "days", "months", "weekdays", "any_day", "any_weekday")

    def __init__(self, expr: str) -> None:
        if not isinstance(expr, str):
            raise TypeError(f"cron must be a str, not {type(expr).__name__!r}")
        parts = expr.split()
        if len(parts) != 5:
            raise ValueError(
                f"cron must have 5 fields (minute hour day-of-month month day-of-week), got {expr!r}"
            )
        fields = [_field(p, *f) for p, f in zip(parts, _FIELDS)]
        self.expr = " ".join(parts)
        self.minutes, self.hours, self.days, self.months = fields[:4]
        self.weekdays = sorted({d % 7 for d in fields[4]})
        self.any_day, self.any_weekday = parts[2].startswith("*"), parts[4].startswith("*")
        try:
            self.next(0.0)
        except ValueError:
            raise ValueError(f"cron {expr!r} never fires") from None

    def __repr__(self) -> str:
        return f"Cron({self.expr!r})"

    def _day_matches(self, day: datetime.date) -> bool:
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = (day.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow

    def next(self, after: float) -> float:
        """The first firing strictly after Unix time ``after`` (seconds; a whole UTC minute)."""
        minute = math.floor(after / 60) + 1
        day0, start = divmod(minute, 1440)
        epoch = datetime.date(1970, 1, 1)
        for offset in range(_HORIZON):
            day = epoch + datetime.timedelta(days=day0 + offset)
            if not self._day_matches(day):
                continue
            first = start if offset == 0 else 0
            for h in self.hours:
                for m in self.minutes:
                    if h * 60 + m >= first:
                        return float(calendar.timegm(day.timetuple()) + h * 3600 + m * 60)
        raise ValueError(f"cron {self.expr!r} does not fire within four years")

    def _wire(self) -> str:
        """The expression as the scripts read it: five lists, then the two '*' flags."""
        lists = [self.minutes, self.hours, self.days, self.months, self.weekdays]
        flags = ("1" if self.any_day else "0") + ("1" if self.any_weekday else "0")
        return ";".join(",".join(map(str, v)) for v in lists) + ";" + flags

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Cron):
            return NotImplemented
        return self._wire() == other._wire()

    def __hash__(self) -> int:
        return hash(self._wire())
