"""The one exception type for bad user input, and the warning of a run whose numbers look wrong.

Every mistake a user can make in options, files or data raises ``InputError`` with a
one-line message that names the option, file or value at fault. The command-line tools
print that line and exit with status 2; the Python interface lets it propagate.
"""


class InputError(ValueError):
    """Bad input: an option, a file or a value. The message is one line naming the culprit."""

    def __init__(self, message):
        super().__init__(" ".join(str(message).split()))


class SamplingError(RuntimeError):
    """The sampling itself failed (a non-finite loss or gradient); one line naming step and walker."""

    def __init__(self, message):
        super().__init__(" ".join(str(message).split()))


class Interrupted(KeyboardInterrupt):
    """A call stopped by SIGINT or SIGTERM at a row boundary, files flushed; `signal` is its number."""

    def __init__(self, number, message):
        super().__init__(message)
        self.signal = number


class RunWarning(UserWarning):
    """A sample() call that ended with a walker gone wrong (blown up, hot, cold, or far out from the
    others) or its kinetic energy or virial hot: one line with the cause and the cure;
    `Simulation.summary()` says more. The tools print their summary instead."""
