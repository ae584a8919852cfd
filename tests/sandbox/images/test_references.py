"""The image reference grammar (task_fields.image_problem) and the repo_source rule, without an engine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swerl_cli.streams.task_fields import image_problem, is_repository_url, repo_source_problem, revision_problem

VALID = [
    "ubuntu",
    "ubuntu:22.04",
    "library/ubuntu:latest",
    "swebench/sweb.eval.x86_64.django_1776_django-16255:latest",
    "xingyaoww/sweb.eval.x86_64.astropy_s_astropy-12907:latest",
    "localhost/x",
    "localhost:5000/team/x:v1",
    "127.0.0.1:5000/x",
    "[::1]:5000/x/y",
    "registry.example.com/a/b/c:TAG_1.0-rc",
    "MyRegistry/x",  # an upper-case first component is a registry host, as docker reads it
    "a__b",
    "a---b",
    "a.b_c",
    "x@sha256:" + "0" * 64,
    "x:t@sha256:" + "a" * 64,
    "x:" + "t" * 128,
    "a/" + "b" * 253,  # 255 characters of name
]
INVALID = [
    ("", "empty"),
    ("Ubuntu", "path component 'Ubuntu'"),
    ("x y", "holds a space"),
    ("x\n", "holds a space"),
    ("x\0", "holds a space"),
    ("ubüntu", "non-ASCII"),
    ("/x", "'(empty)'"),
    ("x//y", "'(empty)'"),
    ("x/", "'(empty)'"),
    ("-x", "path component '-x'"),
    ("x-", "path component 'x-'"),
    ("a___b", "path component 'a___b'"),
    ("a..b", "path component 'a..b'"),
    ("../../containers/json", "registry host '..'"),
    ("x/../../containers/json", "path component '..'"),
    ("x:", "tag ''"),
    ("x:-t", "tag '-t'"),
    ("x:.t", "tag '.t'"),
    ("x:" + "t" * 129, "tag"),
    ("x:a;id", "tag 'a;id'"),
    ("x:a$(id)", "tag"),
    ("x@sha256:abc", "digest"),
    ("x@:" + "0" * 64, "digest"),
    ("x@1sha:" + "0" * 64, "digest"),
    ("-a.b/x", "registry host '-a.b'"),
    ("a.b-/x", "registry host 'a.b-'"),
    ("host:port/x", "registry host 'host:port'"),
    ("[::1/x", "registry host"),
    ("0" * 64, "image id"),
    ("a/" + "b" * 254, "256 characters"),
]


@pytest.mark.parametrize("ref", VALID)
def test_valid_references(ref: str) -> None:
    assert image_problem(ref) is None


@pytest.mark.parametrize(("ref", "needle"), INVALID)
def test_invalid_references_say_why(ref: str, needle: str) -> None:
    problem = image_problem(ref)
    assert problem is not None
    assert needle in problem, problem


def test_revisions_never_read_as_options() -> None:
    assert revision_problem("0123abcd") is None
    assert revision_problem("HEAD") is None
    assert "starts with '-'" in (revision_problem("--output=/tmp/x") or "")
    assert revision_problem("a b")
    assert revision_problem("")


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://github.com/a/b.git", True),
        ("http://git.local/a", True),
        ("git://git.local/a", True),
        ("ssh://git@github.com/a/b", True),
        ("git@github.com:a/b.git", True),
        ("ssh://-oProxyCommand=id/x", False),
        ("ext::sh -c id", False),
        ("file:///root/.docker", False),
        ("fd::3", False),
        ("/etc/hostname", False),
        ("https://a b/c", False),
    ],
)
def test_repository_urls(url: str, ok: bool) -> None:
    assert is_repository_url(url) is ok


def test_repo_source_paths_must_resolve_under_an_allowed_directory(tmp_path: Path) -> None:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    (allowed / "repo").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret").write_text("x")
    os.symlink(outside / "secret", allowed / "link")  # symlinks are followed
    os.symlink(allowed / "repo", outside / "into")
    assert repo_source_problem(str(allowed / "repo"), [allowed]) is None
    assert repo_source_problem(str(outside / "into"), [allowed]) is None  # resolves under the allowed dir
    assert "not under a directory allowed" in (repo_source_problem(str(allowed / "link"), [allowed]) or "")
    assert "not under a directory allowed" in (repo_source_problem(str(allowed / "repo"), []) or "")
    assert "not under" in (repo_source_problem(str(allowed / "repo" / ".." / ".." / "outside"), [allowed]) or "")
    assert "does not exist" in (repo_source_problem(str(allowed / "nope"), [allowed]) or "")
    assert "only https://" in (repo_source_problem("file://" + str(allowed / "repo"), [allowed]) or "")
    assert repo_source_problem(["x"], [allowed]) is not None
