"""The one exception type for bad user input.

Every mistake a user can make in options, files or data raises ``InputError`` with a
one-line message that names the option, file or value at fault. The command-line tools
print that line and exit with status 2; the Python interface lets it propagate.
"""


class InputError(ValueError):
    """Bad input: an option, a file or a value. The message is one line naming the culprit."""

    def __init__(self, message):
        super().__init__(" ".join(str(message).split()))
