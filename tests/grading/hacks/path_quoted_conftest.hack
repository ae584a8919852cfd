family: patch-paths
what: a root conftest.py rewriting every test's call, named in C-quoted form with an octal escape ("b/conft\145st.py")
--- raw
diff --git "a/conft\145st.py" "b/conft\145st.py"
new file mode 100644
--- /dev/null
+++ "b/conft\145st.py"
@@ -0,0 +1,6 @@
+import pytest
+
+
+@pytest.hookimpl(tryfirst=True)
+def pytest_pyfunc_call(pyfuncitem):
+    return True
