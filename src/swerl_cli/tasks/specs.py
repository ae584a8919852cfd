"""How the SWE-bench harness runs each repository's tests, per version: the facts of its spec table
(`swebench/harness/constants/python.py`, MAP_REPO_VERSION_TO_SPECS) and parser map (MAP_REPO_TO_PARSER), restated
as data. Only what running the tests needs is kept: the test command, the commands run before it
(`eval_commands`, e.g. the locale exports of Django 1.7-3.2) and the log parser's name.

`spec_for(repo, version)` gives a `Spec`; a version the table does not list gets the repository's latest row (the
harness would refuse it; a new dataset version usually keeps the command), an unknown repository gets None.
"""

from __future__ import annotations

from typing import NamedTuple

# The harness's effective commands (its module defines TEST_PYTEST twice; the second, plain one wins).
PYTEST = "pytest -rA"
ASTROPY_OLD = "pytest -rA -vv -o console_output_style=classic --tb=no -p no:nose"
DJANGO = "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
DJANGO_NO_PARALLEL = "./tests/runtests.py --verbosity 2"
SEABORN = "pytest --no-header -rA"
SPHINX = "tox --current-env -epy39 -v --"
SYMPY = "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose"

DJANGO_LOCALE_OLD = (  # Django 1.7 - 2.2
    "export LANG=en_US.UTF-8",
    "export LC_ALL=en_US.UTF-8",
    "export PYTHONIOENCODING=utf8",
    "export LANGUAGE=en_US:en",
)
DJANGO_LOCALE_3 = (  # Django 3.0 - 3.2: the locale is generated at evaluation time
    "sed -i '/en_US.UTF-8/s/^# //g' /etc/locale.gen && locale-gen",
    "export LANG=en_US.UTF-8",
    "export LANGUAGE=en_US:en",
    "export LC_ALL=en_US.UTF-8",
)


class Spec(NamedTuple):
    """What running one (repo, version)'s tests takes."""

    test_cmd: str
    eval_commands: tuple[str, ...] = ()
    log_parser: str = "parse_log_pytest"
    directives: str = "paths"  # paths: test files as given; django: dotted module labels under tests/


def _versions(text: str) -> list[str]:
    return text.split()


# repo -> (parser, [(versions, test_cmd, eval_commands)]); the last row is the repository's latest.
_TABLE: dict[str, tuple[str, list[tuple[list[str], str, tuple[str, ...]]]]] = {
    "astropy/astropy": (
        "parse_log_astropy",
        [
            (_versions("0.1 0.2 0.3 0.4 1.1 1.2 1.3"), ASTROPY_OLD, ()),
            (_versions("3.0 3.1 3.2 4.1 4.2 4.3 5.0 5.1 5.2 v5.3"), PYTEST, ()),
        ],
    ),
    "django/django": (
        "parse_log_django",
        [
            (_versions("1.4 1.5 1.6"), DJANGO, ()),
            (_versions("1.7 1.8 1.10 1.11 2.0 2.1 2.2"), DJANGO, DJANGO_LOCALE_OLD),
            (["1.9"], DJANGO_NO_PARALLEL, DJANGO_LOCALE_OLD),
            (_versions("3.0 3.1 3.2"), DJANGO, DJANGO_LOCALE_3),
            (_versions("4.0 4.1 4.2 5.0 5.1 5.2"), DJANGO, ()),
        ],
    ),
    "marshmallow-code/marshmallow": ("parse_log_marshmallow", [([], PYTEST, ())]),
    "matplotlib/matplotlib": ("parse_log_matplotlib", [([], PYTEST, ())]),
    "mwaskom/seaborn": ("parse_log_seaborn", [([], SEABORN, ())]),
    "pallets/flask": ("parse_log_flask", [([], PYTEST, ())]),
    "psf/requests": ("parse_log_requests", [([], PYTEST, ())]),
    "pvlib/pvlib-python": ("parse_log_pvlib", [([], PYTEST, ())]),
    "pydata/xarray": ("parse_log_xarray", [([], PYTEST, ())]),
    "pydicom/pydicom": ("parse_log_pydicom", [([], PYTEST, ())]),
    "pylint-dev/astroid": ("parse_log_astroid", [([], PYTEST, ())]),
    "pylint-dev/pylint": ("parse_log_pylint", [([], PYTEST, ())]),
    "pytest-dev/pytest": ("parse_log_pytest", [([], PYTEST, ())]),
    "pyvista/pyvista": ("parse_log_pyvista", [([], PYTEST, ())]),
    "scikit-learn/scikit-learn": ("parse_log_scikit", [([], PYTEST, ())]),
    "sphinx-doc/sphinx": ("parse_log_sphinx", [([], SPHINX, ())]),
    "sqlfluff/sqlfluff": ("parse_log_sqlfluff", [([], PYTEST, ())]),
    "sympy/sympy": ("parse_log_sympy", [([], SYMPY, ())]),
}


def spec_for(repo: str, version: str | None) -> Spec | None:
    """The harness's spec for `repo` at `version` (a string: "0.20" is not "0.2"); None for an unknown repo.

    >>> spec_for("django/django", "1.9").test_cmd
    './tests/runtests.py --verbosity 2'
    >>> spec_for("django/django", "3.1").eval_commands[1]
    'export LANG=en_US.UTF-8'
    >>> spec_for("sphinx-doc/sphinx", "7.1").test_cmd
    'tox --current-env -epy39 -v --'
    """
    entry = _TABLE.get(repo)
    if entry is None:
        return None
    parser, rows = entry
    chosen = rows[-1]
    for row in rows:
        if version is not None and version in row[0]:
            chosen = row
    directives = "django" if parser == "parse_log_django" else "paths"
    return Spec(chosen[1], chosen[2], parser, directives)
