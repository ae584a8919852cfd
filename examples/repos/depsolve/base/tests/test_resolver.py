import pytest

from depsolve import CycleError, Registry, UnknownPackage, install_order


@pytest.fixture
def registry():
    reg = Registry()
    reg.add("requests", "2.31.0", ["urllib3>=2", "idna", "certifi"])
    reg.add("urllib3", "2.2.0")
    reg.add("idna", "3.6")
    reg.add("certifi", "2024.2.2")
    return reg


def test_dependencies_first(registry):
    assert install_order(registry, ["requests"]) == ["certifi", "idna", "urllib3", "requests"]


def test_registry_lookup_ignores_spelling(registry):
    assert registry.get("URLLIB3").name == "urllib3"


def test_unknown_requirement(registry):
    registry.add("app", "1.0", ["missing-lib"])
    with pytest.raises(UnknownPackage):
        install_order(registry, ["app"])


def test_shared_dependency_once(registry):
    registry.add("httpx", "0.27.0", ["idna", "certifi"])
    order = install_order(registry, ["requests", "httpx"])
    assert order.count("idna") == 1
    assert order.index("idna") < order.index("httpx")


def test_cycle_detected():
    reg = Registry()
    reg.add("a", "1", ["b"])
    reg.add("b", "1", ["a"])
    with pytest.raises(CycleError):
        install_order(reg, ["a"])
