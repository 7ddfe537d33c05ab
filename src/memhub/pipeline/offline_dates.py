"""Time expressions in English and Chinese, resolved against the message's own date.

Relative words ("tomorrow", "下周") mean nothing once the conversation is old, so the offline
extractor resolves them when it sees them: the memory text gets the date and the metadata gets
`activity_start_time`/`activity_end_time`. Everything is computed from the message time in UTC,
so the same message always resolves the same way.
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

from memhub.timeutil import ms_to_datetime


@dataclass(frozen=True, slots=True)
class TimeRef:
    """A resolved time expression: the span of text it came from and the dates it means."""

    text: str
    start: date
    end: date
    relative: bool  # True when the words only make sense next to the message date
    pos: int  # where the expression starts in the sentence

    def label(self, zh: bool) -> str:
        """The dates as shown in memory text: one day, or a range."""
        if self.start == self.end:
            return self.start.isoformat()
        return f"{self.start.isoformat()}至{self.end.isoformat()}" if zh else f"{self.start} to {self.end}"


def message_date(time_ms: int) -> date:
    """The UTC calendar date of a message time in epoch milliseconds."""
    return ms_to_datetime(time_ms).date()


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _month_span(day: date) -> tuple[date, date]:
    first = day.replace(day=1)
    return first, first.replace(day=calendar.monthrange(day.year, day.month)[1])


def _week_start(day: date, offset_weeks: int) -> date:
    return day - timedelta(days=day.weekday()) + timedelta(weeks=offset_weeks)


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
_MONTHS["sept"] = 9
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAYS_EN = {d.lower(): i for i, d in enumerate(calendar.day_name)}
_WEEKDAY_RE = "|".join(_WEEKDAYS_EN)
_NUM_EN = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_NUM_EN.update({"eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3})
_NUM_EN_RE = r"\d{1,3}|" + "|".join(sorted(_NUM_EN, key=len, reverse=True))

_I = re.IGNORECASE
_EN_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_EN_MONTH_DAY = re.compile(rf"\b(?:on\s+)?({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?", _I)
_EN_DAY_MONTH = re.compile(
    rf"\b(?:on\s+)?(?:the\s+)?(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE})\b\.?(?:,?\s+(\d{{4}})\b)?", _I
)
_EN_DAY_WORDS: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"\b(?:the\s+)?day after tomorrow\b", _I), 2),
    (re.compile(r"\b(?:the\s+)?day before yesterday\b", _I), -2),
    (re.compile(r"\btomorrow(?:\s+(?:morning|afternoon|evening|night))?\b", _I), 1),
    (re.compile(r"\b(?:yesterday(?:\s+(?:morning|afternoon|evening))?|last night)\b", _I), -1),
    (re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", _I), 0),
)
_EN_PERIOD = re.compile(r"\b(next|last|this)\s+(week|weekend|month|year)\b", _I)
_EN_WEEKDAY = re.compile(rf"\b(?:(next|last|this|on)\s+)?({_WEEKDAY_RE})\b", _I)
_EN_IN = re.compile(rf"\bin\s+({_NUM_EN_RE})\s+(day|week|month|year)s?\b", _I)
_EN_AGO = re.compile(rf"\b({_NUM_EN_RE})\s+(day|week|month|year)s?\s+ago\b", _I)

_ZH_NUM = {"零": 0, "一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_ZH_DATE = re.compile(r"(?:(\d{4})年)?(\d{1,2})月(\d{1,2})[日号]")
_ZH_DAY_ONLY = re.compile(r"(?<![\d月])(\d{1,2})[日号](?!子)")
_ZH_DAY_WORDS: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"大后天"), 3),
    (re.compile(r"大前天"), -3),
    (re.compile(r"后天"), 2),
    (re.compile(r"前天"), -2),
    (re.compile(r"明[天日早晚]"), 1),
    (re.compile(r"昨[天日晚]"), -1),
    (re.compile(r"今[天日早晚]"), 0),
)
_ZH_WEEK = re.compile(r"(下|上|这|本)个?(?:周|星期|礼拜)([一二三四五六日天末])?")
_ZH_BARE_WEEKDAY = re.compile(r"(?<![下上这本个])(?:周|星期|礼拜)([一二三四五六日天])")
_ZH_MONTH = re.compile(r"(下|上|这|本)个?月")
_ZH_YEAR = re.compile(r"(明|去|今|前|后)年")
_ZH_OFFSET = re.compile(r"([\d一二两三四五六七八九十半]+)个?(天|周|星期|礼拜|月|年)(后|以后|之后|前|以前|之前)")

_PAST_EN = re.compile(r"\b(?:was|were|went|did|had|got|met|saw|bought|left|came|took|made|ago|last|\w{3,}ed)\b", _I)
_PAST_ZH = re.compile(r"了|过|上周|上个|去年|昨|前天")


def _zh_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if text == "半":
        return None
    if "十" in text:
        tens, _, ones = text.partition("十")
        return _ZH_NUM.get(tens, 1) * 10 + (_ZH_NUM.get(ones, 0) if ones else 0)
    return _ZH_NUM.get(text)


def _offset(today: date, amount: int, unit: str) -> tuple[date, date]:
    if unit in ("day", "天"):
        day = today + timedelta(days=amount)
        return day, day
    if unit in ("week", "周", "星期", "礼拜"):
        day = today + timedelta(weeks=amount)
        return day, day
    if unit in ("month", "月"):
        return _month_span(_add_months(today, amount))
    year = today.year + amount
    return date(year, 1, 1), date(year, 12, 31)


def _period(today: date, shift: int, unit: str) -> tuple[date, date]:
    if unit == "week":
        start = _week_start(today, shift)
        return start, start + timedelta(days=6)
    if unit == "weekend":
        start = _week_start(today, shift) + timedelta(days=5)
        return start, start + timedelta(days=1)
    if unit == "month":
        return _month_span(_add_months(today, shift))
    return date(today.year + shift, 1, 1), date(today.year + shift, 12, 31)


def _weekday(today: date, weekday: int, which: str, past: bool) -> date:
    shift = {"next": 1, "last": -1, "this": 0}.get(which)
    if shift is not None:
        return _week_start(today, shift) + timedelta(days=weekday)
    # A bare weekday points forward for plans ("on Friday") and back for past events.
    delta = (weekday - today.weekday()) % 7
    if past:
        return today - timedelta(days=(today.weekday() - weekday) % 7 or 7)
    return today + timedelta(days=delta or 7)


def _ref(match: re.Match[str], start: date, end: date | None = None, *, relative: bool = True) -> TimeRef:
    return TimeRef(match.group(0).strip(), start, end or start, relative, match.start())


Finder = Callable[[str, date], TimeRef | None]


def _within_calendar(find: Finder) -> Finder:
    """A date pushed past years 1-9999 ("next year" said on 9999-12-31) is no date, not a failed extraction."""

    @functools.wraps(find)
    def guarded(text: str, today: date) -> TimeRef | None:
        try:
            return find(text, today)
        except (OverflowError, ValueError):
            return None

    return guarded


@functools.lru_cache(maxsize=1024)  # the rules of one sentence ask for its time several times
@_within_calendar
def find_time_en(text: str, today: date) -> TimeRef | None:
    """The first English time expression in `text` (most specific pattern first), resolved."""
    if (m := _EN_ISO.search(text)) and (day := _safe_date(int(m[1]), int(m[2]), int(m[3]))):
        return _ref(m, day, relative=False)
    for pattern, month_group, day_group in ((_EN_MONTH_DAY, 1, 2), (_EN_DAY_MONTH, 2, 1)):
        if m := pattern.search(text):
            year = int(m[3]) if m[3] else today.year
            if day := _safe_date(year, _MONTHS[m[month_group].lower()], int(m[day_group])):
                return _ref(m, day, relative=False)
    for pattern, days in _EN_DAY_WORDS:
        if m := pattern.search(text):
            return _ref(m, today + timedelta(days=days))
    if m := _EN_PERIOD.search(text):
        shift = {"next": 1, "last": -1, "this": 0}[m[1].lower()]
        return _ref(m, *_period(today, shift, m[2].lower()))
    if m := _EN_WEEKDAY.search(text):
        which = (m[1] or "").lower()
        return _ref(m, _weekday(today, _WEEKDAYS_EN[m[2].lower()], which, bool(_PAST_EN.search(text))))
    for pattern, sign in ((_EN_IN, 1), (_EN_AGO, -1)):
        if m := pattern.search(text):
            amount = int(m[1]) if m[1].isdigit() else _NUM_EN[m[1].lower()]
            return _ref(m, *_offset(today, sign * amount, m[2].lower()))
    return None


@functools.lru_cache(maxsize=1024)
@_within_calendar
def find_time_zh(text: str, today: date) -> TimeRef | None:
    """The first Chinese time expression in `text` (most specific pattern first), resolved."""
    if m := _ZH_DATE.search(text):
        year = int(m[1]) if m[1] else today.year
        if day := _safe_date(year, int(m[2]), int(m[3])):
            return _ref(m, day, relative=False)  # a calendar date reads the same later, year or not
    for pattern, days in _ZH_DAY_WORDS:
        if m := pattern.search(text):
            return _ref(m, today + timedelta(days=days))
    if m := _ZH_WEEK.search(text):
        shift = {"下": 1, "上": -1}.get(m[1], 0)
        if not m[2]:
            return _ref(m, *_period(today, shift, "week"))
        if m[2] == "末":
            return _ref(m, *_period(today, shift, "weekend"))
        return _ref(m, _week_start(today, shift) + timedelta(days=_ZH_WEEKDAY[m[2]]))
    if m := _ZH_BARE_WEEKDAY.search(text):
        return _ref(m, _weekday(today, _ZH_WEEKDAY[m[1]], "", bool(_PAST_ZH.search(text))))
    if m := _ZH_MONTH.search(text):
        return _ref(m, *_period(today, {"下": 1, "上": -1}.get(m[1], 0), "month"))
    if m := _ZH_YEAR.search(text):
        return _ref(m, *_period(today, {"明": 1, "去": -1, "前": -2, "后": 2}.get(m[1], 0), "year"))
    if (m := _ZH_OFFSET.search(text)) and (amount := _zh_number(m[1])) is not None:
        sign = -1 if m[3].endswith("前") else 1
        return _ref(m, *_offset(today, sign * amount, m[2]))
    if (m := _ZH_DAY_ONLY.search(text)) and (day := _safe_date(today.year, today.month, int(m[1]))):
        return _ref(m, day)
    return None
