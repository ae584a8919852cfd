#!/usr/bin/env python3
# ruff: noqa: T201
"""swerl's in-sandbox editor tools (open, goto, scroll_up, scroll_down, create, edit, replace, search_file).

Shipped into the container at episode start and called through shell functions. Standard library only, so it runs
on any python3 in the task image. The editor state (open file, first line of the window) lives in a two-line file
(`<first line>\n<path>`) so it persists across commands of one episode. Only `os` and `sys` are imported (and
`warnings`, when an edit of a .py file is checked): each tool call is a fresh interpreter (run with -I -S), and
`json` alone (via `re`) would triple its start-up cost.

It stays one file, over the 300-line rule (docs/architecture.md lists it as the exemption): it is the unit shipped
into each sandbox. The agent loop writes it with one `write_file` per episode (agent/loop.py), and every tool call
imports it, by name, into a fresh isolated interpreter on the task image's python3 (agent/tools.py's launcher). A
second module would be a second write per episode and a second import per call, and the loop and the launcher would
have to know the list of files; nothing outside the sandbox imports it, so a split would buy no reuse.
"""

import os
import sys

# Beside this script (agent/tools.py: TOOLS_DIR/state), wherever the sandbox put it: a local sandbox keeps its own.
STATE = os.environ.get("SWERL_STATE") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "state")
WINDOW = int(os.environ.get("SWERL_WINDOW", "100"))
# syntax: an edit or replace that would turn a compiling .py file into one that does not is refused (the file is left
# as it was), as SWE-agent's linting editor does; off: every edit is applied.
EDIT_CHECK = os.environ.get("SWERL_EDIT_CHECK", "syntax")
EDIT_REFUSED = (
    "Your proposed edit has introduced new syntax error(s). Please read this error message carefully and then retry "
    "editing the file."
)
EDIT_DONE = (
    "File updated. Please review the changes and make sure they are correct "
    "(correct indentation, no duplicate lines, etc). Edit the file again if necessary."
)


class ToolError(Exception):
    pass


def load_state():
    try:
        with open(STATE, encoding="utf-8", errors="surrogateescape", newline="") as fh:
            start, _, path = fh.read().partition("\n")
        return {"file": path or None, "start": max(1, int(start))}
    except (OSError, ValueError):
        return {"file": None, "start": 1}


def save_state(state):
    os.makedirs(os.path.dirname(STATE), exist_ok=True)
    tmp = STATE + ".tmp"
    with open(tmp, "w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
        fh.write(f"{int(state.get('start') or 1)}\n{state.get('file') or ''}")
    os.replace(tmp, STATE)


def split_lines(text):
    """Return (lines without newlines, had_trailing_newline)."""
    if text == "":
        return [], True
    lines = text.split("\n")
    if lines[-1] == "":
        return lines[:-1], True
    return lines, False


def read_lines(path):
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as fh:
        return split_lines(fh.read())


def joined(lines, trailing_newline=True):
    text = "\n".join(lines)
    return text + "\n" if lines and trailing_newline else text


def write_lines(path, lines, trailing_newline=True):
    with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
        fh.write(joined(lines, trailing_newline))


def render(path, lines, start):
    """The window of `lines` (the contents of `path`) from line `start`, and the (clamped) start."""
    n = len(lines)
    start = max(1, min(start, max(1, n - WINDOW + 1)))
    end = min(n, start + WINDOW - 1)
    out = [f"[File: {path} ({n} lines total)]"]
    if start > 1:
        out.append(f"({start - 1} more lines above)")
    for i in range(start, end + 1):
        out.append(f"{i}:{lines[i - 1]}")
    if n == 0:
        out.append("1:")
    if end < n:
        out.append(f"({n - end} more lines below)")
    return "\n".join(out), start


def show(path, start):
    """Print the window of `path` starting at line `start`; return the (clamped) start."""
    text, start = render(path, read_lines(path)[0], start)
    print(text)
    return start


def syntax_error(path, old_text, new_text):
    """With SWERL_EDIT_CHECK=syntax (the default) and a .py file that compiled before: the error the new text
    introduces ("E999 <kind>: <message> (line N)"), else None. Files that did not compile before are not judged."""
    if EDIT_CHECK != "syntax" or not path.endswith(".py"):
        return None
    import warnings  # only here: most tool calls never need it

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings (escape sequences...) are not this check's business
        try:
            compile(old_text, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return None
        try:
            compile(new_text, path, "exec", dont_inherit=True)
        except SyntaxError as e:
            where = f" (line {e.lineno})" if e.lineno else ""
            return f"E999 {type(e).__name__}: {e.msg}{where}"
        except ValueError as e:  # e.g. a NUL byte
            return f"E999 ValueError: {e}"
    return None


def refuse_edit(path, error, old_lines, new_lines, line):
    """Print why an edit was not applied: the error, the window as the edit would have left it, and as it is."""
    would, _ = render(path, new_lines, centered(line))
    was, start = render(path, old_lines, centered(line))
    rule = "-" * 48
    print(EDIT_REFUSED)
    print(f"\nERRORS:\n- {error}\n\nWith your edit the file would read:\n{rule}\n{would}\n{rule}\n")
    print(f"It still reads (your edit was NOT applied):\n{rule}\n{was}\n{rule}\n")
    print("Fix the edit (the line range, or the text and its indentation) and run it again.")
    return start


def centered(line):
    return max(1, line - WINDOW // 2)


def need_open(state):
    path = state.get("file")
    if not path:
        raise ToolError("No file open. Use the open command first.")
    if not os.path.isfile(path):
        raise ToolError(f"File {path} no longer exists.")
    return path


def parse_int(text, what):
    try:
        return int(text)
    except ValueError:
        raise ToolError(f"{what} must be an integer, got {text!r}") from None


def split_flags(args, flags_with_value=(), bool_flags=()):
    opts, rest, i = {}, [], 0
    while i < len(args):
        a = args[i]
        if a in flags_with_value:
            if i + 1 >= len(args):
                raise ToolError(f"{a} needs a value")
            opts[a] = args[i + 1]
            i += 2
            continue
        if a in bool_flags:
            opts[a] = True
        else:
            rest.append(a)
        i += 1
    return opts, rest


def cmd_open(args, state):
    if len(args) > 2:
        raise ToolError("Usage: open [FILE] [LINE_NUMBER]")
    if not args:
        path = need_open(state)
        state["start"] = show(path, state.get("start", 1))
        return
    path = os.path.abspath(args[0])
    if not os.path.exists(path):
        raise ToolError(f"File {args[0]} not found")
    if os.path.isdir(path):
        raise ToolError(f"{args[0]} is a directory. You can only open files. Use cd or ls to navigate directories.")
    lines, _ = read_lines(path)
    start = 1
    if len(args) == 2:
        line = parse_int(args[1], "LINE_NUMBER")
        if line < 1 or line > max(1, len(lines)):
            raise ToolError(f"LINE_NUMBER must be between 1 and {max(1, len(lines))}, got {line}")
        start = centered(line)
    state["file"] = path
    state["start"] = show(path, start)


def cmd_goto(args, state):
    if len(args) != 1:
        raise ToolError("Usage: goto LINE_NUMBER")
    path = need_open(state)
    line = parse_int(args[0], "LINE_NUMBER")
    n = len(read_lines(path)[0])
    if line < 1 or line > max(1, n):
        raise ToolError(f"LINE_NUMBER must be between 1 and {max(1, n)}, got {line}")
    state["start"] = show(path, centered(line))


def cmd_scroll(args, state, direction):
    if args:
        raise ToolError(f"Usage: scroll_{'down' if direction > 0 else 'up'} (no arguments)")
    path = need_open(state)
    state["start"] = show(path, state.get("start", 1) + direction * WINDOW)


def cmd_create(args, state):
    if len(args) != 1:
        raise ToolError("Usage: create FILENAME")
    path = os.path.abspath(args[0])
    if os.path.exists(path):
        raise ToolError(f"File {args[0]} already exists. Use open to view it or edit to change it.")
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8"):
        pass
    state["file"] = path
    state["start"] = show(path, 1)


def read_replacement(rest):
    if rest:
        if len(rest) > 1:
            raise ToolError('Too many arguments: quote the replacement text, e.g. edit 3:3 "new text"')
        return rest[0] + "\n"
    if sys.stdin is None or sys.stdin.isatty():
        raise ToolError("No replacement text: give it as a quoted argument or with a heredoc (<< 'EOF').")
    return sys.stdin.read()


def cmd_edit(args, state):
    opts, rest = split_flags(args, flags_with_value=("--file",))
    if not rest:
        raise ToolError("Usage: edit [--file PATH] START:END [REPLACEMENT_TEXT]  (or a heredoc)")
    spec, rest = rest[0], rest[1:]
    if ":" not in spec:
        raise ToolError(f"LINE_RANGE must look like START:END, got {spec!r}")
    a, _, b = spec.partition(":")
    start, end = parse_int(a, "START"), parse_int(b, "END")
    path = os.path.abspath(opts["--file"]) if "--file" in opts else need_open(state)
    if not os.path.isfile(path):
        raise ToolError(f"File {opts.get('--file', path)} not found")
    text = read_replacement(rest)
    lines, trailing = read_lines(path)
    n = len(lines)
    if start < 1 or start > n + 1:
        raise ToolError(f"START must be between 1 and {n + 1} (the file has {n} lines), got {start}")
    if end < start - 1 or end > n:
        raise ToolError(f"END must be between {start - 1} and {n} (the file has {n} lines), got {end}")
    new = text.split("\n")
    if new and new[-1] == "":
        new = new[:-1]
    edited = lines[: start - 1] + new + lines[end:]
    state["file"] = path
    error = syntax_error(path, joined(lines, trailing), joined(edited, trailing or n == 0))
    if error:
        state["start"] = refuse_edit(path, error, lines, edited, start)
        return 1
    write_lines(path, edited, trailing or n == 0)
    print(EDIT_DONE)
    state["start"] = show(path, centered(start))
    return 0


def cmd_replace(args, state):
    opts, rest = split_flags(args, flags_with_value=("--file",), bool_flags=("--replace-all",))
    if len(rest) != 2:
        raise ToolError('Usage: replace [--replace-all] [--file PATH] "SEARCH" "REPLACE"')
    search, repl = rest
    if search == "":
        raise ToolError("SEARCH must not be empty")
    path = os.path.abspath(opts["--file"]) if "--file" in opts else need_open(state)
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as fh:
        text = fh.read()
    count = text.count(search)
    if count == 0:
        raise ToolError(f"SEARCH text not found in {path}. Nothing was changed.")
    if count > 1 and not opts.get("--replace-all"):
        raise ToolError(
            f"SEARCH text occurs {count} times in {path}. Make it unique, or pass --replace-all. Nothing was changed."
        )
    first_line = text[: text.index(search)].count("\n") + 1
    new_text = text.replace(search, repl) if opts.get("--replace-all") else text.replace(search, repl, 1)
    state["file"] = path
    error = syntax_error(path, text, new_text)
    if error:
        state["start"] = refuse_edit(path, error, split_lines(text)[0], split_lines(new_text)[0], first_line)
        return 1
    with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
        fh.write(new_text)
    print(f"Replaced {count if opts.get('--replace-all') else 1} occurrence(s).")
    print(EDIT_DONE)
    state["start"] = show(path, centered(first_line))


def cmd_search_file(args, state):
    if len(args) not in (1, 2):
        raise ToolError("Usage: search_file SEARCH_TERM [FILE]")
    term = args[0]
    path = os.path.abspath(args[1]) if len(args) == 2 else need_open(state)
    if not os.path.isfile(path):
        raise ToolError(f"File {args[1] if len(args) == 2 else path} not found")
    lines, _ = read_lines(path)
    hits = [(i + 1, line) for i, line in enumerate(lines) if term in line]
    if not hits:
        print(f'No matches found for "{term}" in {path}')
        return
    if len(hits) > 100:
        print(f'More than 100 lines matched for "{term}" in {path}. Please narrow your search.')
        return
    print(f'Found {len(hits)} matches for "{term}" in {path}:')
    for i, line in hits:
        print(f"Line {i}:{line}")
    print(f'End of matches for "{term}" in {path}')


COMMANDS = {
    "open": cmd_open,
    "goto": cmd_goto,
    "scroll_down": lambda a, s: cmd_scroll(a, s, 1),
    "scroll_up": lambda a, s: cmd_scroll(a, s, -1),
    "create": cmd_create,
    "edit": cmd_edit,
    "replace": cmd_replace,
    "search_file": cmd_search_file,
}


def main(argv):
    if not argv or argv[0] not in COMMANDS:
        print(f"Error: unknown tool; known: {', '.join(sorted(COMMANDS))}")
        return 2
    state = load_state()
    try:
        rc = COMMANDS[argv[0]](argv[1:], state)
    except ToolError as e:
        print(f"Error: {e}")
        return 1
    except OSError as e:
        print(f"Error: {e.strerror or e}: {e.filename or ''}".rstrip(": "))
        return 1
    save_state(state)
    return rc or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
