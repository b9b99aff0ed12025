"""The base of every error ``repro`` reports to its user.

An error derived from :class:`ReproError` is a one-line message (it names the parameter, file or
run at fault); ``repro``'s command line prints it as ``repro: error: <message>`` on stderr, with
no traceback, and exits with the class's ``exit_code`` (2 unless a class says otherwise). Other
exceptions are bugs and keep their traceback.

A class keeps its older built-in base as a second base (``class ClaimsError(ReproError,
ValueError)``), so code that catches ``ValueError`` or ``RuntimeError`` still catches it.
"""

from __future__ import annotations

EXIT_ERROR = 2


class ReproError(Exception):
    """A one-line error for the user: ``repro: <lead>: <message>``, exit ``exit_code``."""

    exit_code: int = EXIT_ERROR
    lead: str = "error"  # the word before the message
