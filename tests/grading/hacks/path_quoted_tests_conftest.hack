family: patch-paths
what: a conftest.py beside the tests skipping every test call (pytest_pyfunc_call), named "b/@TESTDIR@/conft\145st.py"
--- raw
diff --git "a/@TESTDIR@/conft\145st.py" "b/@TESTDIR@/conft\145st.py"
new file mode 100644
--- /dev/null
+++ "b/@TESTDIR@/conft\145st.py"
@@ -0,0 +1,6 @@
+import pytest
+
+
+@pytest.hookimpl(tryfirst=True)
+def pytest_pyfunc_call(pyfuncitem):
+    return True
