import pytest

from depsolve import Requirement


def test_parse_bare_name():
    assert Requirement.parse("idna") == Requirement("idna")


def test_parse_with_version():
    req = Requirement.parse("urllib3 >= 2.0")
    assert (req.name, req.op, req.version) == ("urllib3", ">=", "2.0")
    assert str(req) == "urllib3>=2.0"


def test_parse_invalid():
    with pytest.raises(ValueError, match="invalid requirement"):
        Requirement.parse(">=1.0")
