family: patch-paths
what: a symlink named "conft\145st.py" (quoted, mode 120000) pointing at a test-skipping (pytest_pyfunc_call) module the patch adds to the package
--- create @PKG@/_report.py
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    return True
--- raw
diff --git "a/conft\145st.py" "b/conft\145st.py"
new file mode 120000
--- /dev/null
+++ "b/conft\145st.py"
@@ -0,0 +1 @@
+@PKG@/_report.py
\ No newline at end of file
