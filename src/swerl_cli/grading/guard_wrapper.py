# mypy: ignore-errors
# (runs under the task image's Python, 3.6 and later: no annotations that need a newer one)
"""swerl's grading wrapper: runs a task's test command with the guard plugin and writes what the plugin reported
to the result file, authenticated with a key only this process knows (docs/grading.md, "Threat model").
Standalone: it runs under the task image's Python (3.6+), never inside swerl.

usage: wrapper.py GUARD_DIR PLUGIN_MODULE TIMEOUT_S TEST_CMD [USER]

GUARD_DIR/private (mode 0700) holds `key`, read and deleted before the test command starts. With USER (container
sandboxes: this wrapper runs as root) the test command runs as that unprivileged user (`auto`: the owner of the
repository, or nobody when root owns it), with the repository handed to it, so the tests can read no file, fd,
environment entry or memory of this process and cannot signal it. The plugin writes to a pipe whose read end stays
here. When the command ends (or TIMEOUT_S passes: its process group is killed), the lines are written with a
header to GUARD_DIR/private/result, and the last line printed is `SWERL-GUARD-RESULT <path> <hmac-sha256>`.
"""

import hashlib
import hmac
import json
import os
import pwd
import signal
import subprocess
import sys
import threading
import time

CAP = 64 << 20


def _read(fd, chunks):
    size = 0
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except OSError:
            return
        if not data:
            return
        size += len(data)
        if size <= CAP:
            chunks.append(data)


def _env(guard_dir, plugin, fd, user):
    env = dict(os.environ)
    for key in ("PYTEST_ADDOPTS", "PYTHONPATH", "PYTHONSAFEPATH"):
        env["SWERL_GUARD_OLD_" + key] = env.get(key, "__swerl_unset__")
    addopts = env.get("PYTEST_ADDOPTS", "")
    env["PYTEST_ADDOPTS"] = (addopts + " -p " + plugin + " -p no:cacheprovider").strip()
    env["PYTHONPATH"] = guard_dir + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONSAFEPATH"] = "1"  # 3.11+: the repository is not put first on sys.path (`python -m pytest`)
    if user is not None:
        env.update(HOME=user[2], USER=user[3], LOGNAME=user[3])
    env["SWERL_GUARD_FD"] = str(fd)
    env["SWERL_GUARD_REPO"] = os.getcwd()
    return env


def _subreaper():
    """Become the subreaper of everything the command starts: orphans (daemons, a fork bomb's setsid'd children)
    are reparented here instead of to init, so `_kill_descendants` reaches them."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:  # no ctypes, no prctl: the grader's sweep after the run still kills them
        pass


def _descendants(me):
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(name))
    out, todo = [], [me]
    while todo:
        for child in kids.get(todo.pop(), ()):
            out.append(child)
            todo.append(child)
    return out


def _kill_descendants():
    """Stop, then kill, every process below this one until none is left (a fork bomb stops forking once stopped)."""
    me = os.getpid()
    for _ in range(100):
        pids = _descendants(me)
        if not pids:
            return
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        time.sleep(0.01)


def _user(spec, repo):
    """(uid, gid, home, name) of the tests' user: `auto` is the repository's owner, or nobody when root owns it."""
    if spec == "auto":
        uid = os.stat(repo).st_uid or 65534
        try:
            ent = pwd.getpwuid(uid)
        except KeyError:
            return uid, uid, None, str(uid)
    else:
        try:
            ent = pwd.getpwuid(int(spec)) if spec.isdigit() else pwd.getpwnam(spec)
        except (KeyError, ValueError):
            raise SystemExit(f"swerl-guard: no user {spec!r} in the image") from None
    if ent.pw_uid == 0:
        raise SystemExit("swerl-guard: the tests' user must not be root")
    return ent.pw_uid, ent.pw_gid, ent.pw_dir, ent.pw_name


def _hand_over(repo, uid, gid, home):
    """The repository (never following a symlink) and a home directory become the tests' user's; returns HOME."""
    for root, dirs, files in os.walk(repo):
        for name in [""] + dirs + files:
            path = os.path.join(root, name) if name else root
            try:
                st = os.lstat(path)
                if (st.st_uid, st.st_gid) != (uid, gid):
                    os.lchown(path, uid, gid)
            except OSError:
                pass
    if home and os.path.isdir(home) and os.stat(home).st_uid == uid:
        return home
    home = f"/tmp/swerl-home-{uid}"
    try:
        os.mkdir(home, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(home)
    if st.st_uid != uid and st.st_uid != 0:
        raise SystemExit(f"swerl-guard: {home} belongs to another user")
    os.lchown(home, uid, gid)
    return home


def _drop(uid, gid):
    def go():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    return go


def _oom_kills():
    """The container's count of out-of-memory kills (cgroup v2, then v1), or None where it cannot be read."""
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(path) as f:
                for line in f:
                    key, _, val = line.partition(" ")
                    if key == "oom_kill":
                        return int(val)
        except (OSError, ValueError):
            continue
    return None


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def main(argv):
    guard_dir, plugin, timeout_s, cmd = argv[1], argv[2], float(argv[3]), argv[4]
    private = os.path.join(guard_dir, "private")
    key_path = os.path.join(private, "key")
    with open(key_path, "rb") as f:
        key = f.read().strip()
    os.unlink(key_path)
    user, drop = None, None
    if len(argv) > 5:
        uid, gid, home, name = _user(argv[5], os.getcwd())
        user = (uid, gid, _hand_over(os.getcwd(), uid, gid, home), name)
        drop = _drop(uid, gid)
    _subreaper()
    oom_before = _oom_kills()
    r, w = os.pipe()
    chunks = []
    t0 = time.time()
    env = _env(guard_dir, plugin, w, user)
    proc = subprocess.Popen(["bash", "-c", cmd], env=env, pass_fds=(w,), start_new_session=True, preexec_fn=drop)
    os.close(w)
    reader = threading.Thread(target=_read, args=(r, chunks))
    reader.daemon = True
    reader.start()
    timed_out = False
    try:
        code = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        code = proc.wait()
    _kill_group(proc.pid)  # what the command left behind in its group
    _kill_descendants()  # and anywhere else below this process
    reader.join(2.0)  # a process outside the group may hold the pipe open: do not wait for it
    head = {"exit_code": code, "timed_out": timed_out, "duration_s": round(time.time() - t0, 3)}
    head["uid"] = user[0] if user else os.getuid()
    oom_after = _oom_kills()
    head["oom_kills"] = oom_after - oom_before if None not in (oom_before, oom_after) else None
    data = (json.dumps(head) + "\n").encode() + b"".join(list(chunks))
    path = os.path.join(private, "result")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    mac = hmac.new(key, data, hashlib.sha256).hexdigest()
    sys.stdout.write(f"\nSWERL-GUARD-RESULT {path} {mac}\n")
    sys.stdout.flush()
    return 124 if timed_out else code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
