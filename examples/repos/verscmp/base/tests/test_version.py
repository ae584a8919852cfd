import pytest

from verscmp import Version, latest


def test_parse_parts():
    v = Version("1.2.3-rc.1")
    assert len(v.core) == 3
    assert len(v.prerelease) == 2


@pytest.mark.parametrize("text", ["1.2", "1.2.3.4", "v1.2.3", "1.2.3-", "a.b.c"])
def test_rejects_invalid(text):
    with pytest.raises(ValueError, match="not a semantic version"):
        Version(text)


def test_patch_order():
    assert Version("1.2.3") < Version("1.2.4")


def test_equal_versions():
    assert Version("2.0.0") == Version("2.0.0")
    assert len({Version("2.0.0"), Version("2.0.0")}) == 1


def test_prerelease_before_release():
    assert Version("1.0.0-rc.1") < Version("1.0.0")


def test_prerelease_alphabetical():
    assert Version("1.0.0-alpha") < Version("1.0.0-beta")


def test_latest_simple():
    assert latest(["0.1.0", "0.3.0", "0.2.0"]) == "0.3.0"
