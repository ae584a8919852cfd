from datetime import date

from bizdays import business_days_between, is_business_day

MON = date(2024, 3, 4)


def test_is_business_day():
    assert is_business_day(MON)
    assert not is_business_day(date(2024, 3, 9))
    assert not is_business_day(MON, holidays={MON})


def test_same_week():
    assert business_days_between(MON, date(2024, 3, 7)) == 3


def test_full_weeks():
    assert business_days_between(MON, date(2024, 3, 18)) == 10


def test_empty_range():
    assert business_days_between(MON, MON) == 0


def test_reversed_is_negative():
    assert business_days_between(date(2024, 3, 7), MON) == -3


def test_holidays_subtracted():
    assert business_days_between(MON, date(2024, 3, 11), holidays=[date(2024, 3, 5), date(2024, 3, 9)]) == 4
