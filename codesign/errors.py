"""The project's error hierarchy, caught once, in the CLI.

Every error carries a message a user can act on; the CLI prints it on one line and exits with the
status the class names (2 for bad input, 1 for a solve that could not produce an answer).
"""
from __future__ import annotations


class CodesignError(Exception):
    """Base of every error codesign raises on purpose."""

    exit_status = 1


class SpecError(CodesignError):
    """Bad input: a problem file, a workload file or a value inside one.

    The message names the file, the key path inside it (``topology.dims[1].bandwidth``) and what
    was expected, so the user can fix it without reading code.
    """

    exit_status = 2

    def __init__(self, message: str, *, file: str | None = None, path: str | None = None,
                 line: int | None = None) -> None:
        self.file = file
        self.path = path
        self.line = line
        self.detail = message
        where = []
        if file:
            where.append(f"{file}:{line}" if line else file)
        if path:
            where.append(path)
        super().__init__(f"{': '.join(where)}: {message}" if where else message)


class InfeasibleError(CodesignError):
    """The problem has no feasible answer; the message says which budget or target fails and by how much."""

    exit_status = 1


class SolverError(CodesignError):
    """The solver failed, or stopped without any feasible answer, for a reason other than infeasibility."""

    exit_status = 1
