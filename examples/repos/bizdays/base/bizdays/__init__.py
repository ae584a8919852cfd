"""Business-day arithmetic."""

from bizdays.count import business_days_between, is_business_day
from bizdays.shift import add_business_days

__all__ = ["add_business_days", "business_days_between", "is_business_day"]
