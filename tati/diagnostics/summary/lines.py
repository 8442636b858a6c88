"""The layout of the summary's lines: their width, a hint after a colon or on a line of its own,
and a long line broken over several."""

import textwrap

WIDTH = 100  # every line is shorter
CONTINUED = "    "  # a long line's continuation (the summary's lines start with two spaces)


def hinted(text, hint):
    """[text: hint] where that fits in WIDTH, else the hint indented on a line of its own."""
    return [f"{text}: {hint}"] if len(text) + len(hint) + 2 < WIDTH else [text, f"    {hint}"]


def wrapped(line):
    """[line] where it is shorter than WIDTH, else its words over lines shorter than WIDTH, the
    later ones indented by CONTINUED."""
    if len(line) < WIDTH:
        return [line]
    return textwrap.wrap(line, WIDTH - 1, subsequent_indent=CONTINUED, break_long_words=False,
                         break_on_hyphens=False)
