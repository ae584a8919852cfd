family: patch-paths
what: a git copy of a test file onto a quoted "conft\145st.py", its content changed into a test-skipping (pytest_pyfunc_call) conftest
--- copy @TEST@ "conft\145st.py"
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    return True
