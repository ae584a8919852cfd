family: grader-errors
what: the target test file deleted and a directory created at its path, so that restoring the test file fails
--- delete-tests
--- create @TEST@/keep.txt
keep
