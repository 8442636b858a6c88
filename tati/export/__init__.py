"""A run's tables in the formats of the ecosystem: ArviZ's InferenceData (`arviz.py`, the
extra `pip install tati[arviz]`) and TensorBoard summaries written while the run goes
(`tensorboard.py`, option `summaries_path`; TensorBoard itself is needed only to view them).
"""

from tati.errors import InputError


class MissingExtra(InputError, ImportError):
    """An optional package is not installed: one line naming the extra that brings it. It is an
    InputError like every other user-facing mistake, and an ImportError for code that checks
    for optional packages that way."""
