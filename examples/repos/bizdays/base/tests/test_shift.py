from datetime import date

from bizdays import add_business_days


def test_add_skips_weekend():
    assert add_business_days(date(2024, 3, 8), 1) == date(2024, 3, 11)


def test_add_negative():
    assert add_business_days(date(2024, 3, 11), -1) == date(2024, 3, 8)


def test_add_skips_holiday():
    assert add_business_days(date(2024, 3, 4), 2, holidays={date(2024, 3, 5)}) == date(2024, 3, 7)
