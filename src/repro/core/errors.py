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


# The four families every error of the package belongs to (a module's own name for one, such as
# ``ParameterError`` or ``ClaimsError``, is the family under a name that says where it comes from).


def report(exc: ReproError) -> int:
    """Print ``exc`` as ``repro: <lead>: <message>`` on stderr; its exit code (every entry point's one handler)."""
    import sys

    print(f"repro: {exc.lead}: {exc}", file=sys.stderr)
    return exc.exit_code


class BadInput(ReproError, ValueError):
    """Something the user gave is wrong: a parameter, a file, a claim, a price table, an argument (exit 2)."""


class MissingEnvironment(ReproError, RuntimeError):
    """Something this machine lacks: a dataset, a package, a command (exit 2); the message says how to get it."""


class RunFailed(ReproError, RuntimeError):
    """A run that started failed: a notebook, a child process, a cluster task, the book (exit 1)."""

    exit_code = 1


class DeadlineReached(ReproError, TimeoutError):
    """Work stopped at its deadline (``REPRO_DEADLINE``): what finished is kept and a rerun resumes (exit 3)."""

    exit_code = 3  # not a failure
    lead = "stopped at the deadline"
