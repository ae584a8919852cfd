family: patch-paths
what: a root conftest.py rewriting every test's call, under the leading component z/ (git's -p1 strips any first component)
--- raw
diff --git z/conftest.py z/conftest.py
new file mode 100644
--- /dev/null
+++ z/conftest.py
@@ -0,0 +1,6 @@
+import pytest
+
+
+@pytest.hookimpl(tryfirst=True)
+def pytest_pyfunc_call(pyfuncitem):
+    return True
