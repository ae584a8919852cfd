"""`swerl tasks mine`: task records from a local git repository's fix commits.

A candidate is a non-merge commit whose diff touches test files and source files, within the size limits (the
paper's filters: at most 7 source files, fewer than 500 changed source lines). Its parent is `base_commit`; the
source part of the diff is the gold `patch`, the test part `test_patch`. Each candidate gets an image built by
`swerl tasks build`'s builder from the base image without network: the task's `repo_source` (this repository,
every ref, full history) checked out at the base commit, then `setup`; its tests run `repeats` times in fresh
sandboxes before the fix (base + test_patch) and after it (+ patch). FAIL_TO_PASS = tests that pass after and not
before, PASS_TO_PASS = tests that pass in both. A candidate is dropped, and counted by reason, when no test goes
from fail to pass, when any test changes outcome across repeats (flaky), or when a run errors.
"""

from swerl_cli.tasks.mining.commits import PYTEST as PYTEST
from swerl_cli.tasks.mining.commits import Candidate as Candidate
from swerl_cli.tasks.mining.commits import MineConfig as MineConfig
from swerl_cli.tasks.mining.commits import inspect_commit as inspect_commit
from swerl_cli.tasks.mining.commits import is_code_file as is_code_file
from swerl_cli.tasks.mining.commits import is_test_file as is_test_file
from swerl_cli.tasks.mining.commits import list_commits as list_commits
from swerl_cli.tasks.mining.run import MineStats as MineStats
from swerl_cli.tasks.mining.run import image_slug as image_slug
from swerl_cli.tasks.mining.run import load_issues as load_issues
from swerl_cli.tasks.mining.run import mine_records as mine_records
from swerl_cli.tasks.mining.run import outcome_lists as outcome_lists
from swerl_cli.tasks.mining.run import task_record as task_record
