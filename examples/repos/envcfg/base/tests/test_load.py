import pytest

from envcfg import load

DEFAULTS = {"port": 8080, "ratio": 0.5, "debug": False, "hosts": ["localhost"], "name": "app", "token": None}


def test_defaults_when_unset():
    assert load(DEFAULTS, {}) == DEFAULTS


def test_int_and_float():
    settings = load(DEFAULTS, {"APP_PORT": "9000", "APP_RATIO": "0.25"})
    assert (settings["port"], settings["ratio"]) == (9000, 0.25)


def test_list_override():
    assert load(DEFAULTS, {"APP_HOSTS": "a, b,,c"})["hosts"] == ["a", "b", "c"]


def test_string_and_none_default():
    settings = load(DEFAULTS, {"APP_NAME": "svc", "APP_TOKEN": "xyz"})
    assert (settings["name"], settings["token"]) == ("svc", "xyz")


def test_bool_true():
    assert load(DEFAULTS, {"APP_DEBUG": "true"})["debug"] is True


def test_bad_int_names_variable():
    with pytest.raises(ValueError, match="APP_PORT"):
        load(DEFAULTS, {"APP_PORT": "eighty"})


def test_custom_prefix():
    assert load({"port": 1}, {"SVC_PORT": "2"}, prefix="SVC_") == {"port": 2}
