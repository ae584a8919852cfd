"""Counting business days."""

SATURDAY = 5


def is_business_day(day, holidays=()):
    """True for Monday to Friday unless `day` is a holiday."""
    return day.weekday() < SATURDAY and day not in holidays


def business_days_between(start, end, holidays=()):
    """Business days in [start, end); negative when `end` is before `start`."""
    if end < start:
        return -business_days_between(end, start, holidays)
    weeks, rest = divmod((end - start).days, 7)
    count = weeks * 5
    first = start.weekday()
    for offset in range(rest):
        if first + offset < SATURDAY:
            count += 1
    count -= sum(1 for h in set(holidays) if start <= h < end and h.weekday() < SATURDAY)
    return count
