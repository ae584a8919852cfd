family: patch-paths
what: every test file deleted and the tests directory replaced by a symlink into the package, so that restoring a test file would write (or delete) through the link
--- delete-tests
--- raw
diff --git a/@TESTDIR@ b/@TESTDIR@
new file mode 120000
--- /dev/null
+++ b/@TESTDIR@
@@ -0,0 +1 @@
+@PKG@
\ No newline at end of file
