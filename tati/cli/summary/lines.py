"""The layout of the summary's lines: their width, and a hint after a colon or on a line of its own."""

WIDTH = 100  # every line is shorter


def hinted(text, hint):
    """[text: hint] where that fits in WIDTH, else the hint indented on a line of its own."""
    return [f"{text}: {hint}"] if len(text) + len(hint) + 2 < WIDTH else [text, f"    {hint}"]
