"""Full justification of wrapped lines."""


def justify(lines, width):
    """Pad the gaps of every line except the last so that it is exactly `width` characters wide."""
    out = []
    for i, line in enumerate(lines):
        words = line.split(" ")
        if i == len(lines) - 1 or len(words) == 1:
            out.append(line)
            continue
        gaps = len(words) - 1
        spaces = width - sum(len(w) for w in words)
        wide, extra = divmod(spaces, gaps)
        parts = []
        for j, word in enumerate(words[:-1]):
            parts.append(word + " " * (wide + (1 if j < extra else 0)))
        out.append("".join(parts) + words[-1])
    return out
