"""Moving by business days."""

from datetime import timedelta

from bizdays.count import is_business_day


def add_business_days(day, n, holidays=()):
    """The date `n` business days after `day` (before it when `n` is negative)."""
    step = timedelta(days=1 if n >= 0 else -1)
    remaining = abs(n)
    while remaining:
        day += step
        if is_business_day(day, holidays):
            remaining -= 1
    return day
