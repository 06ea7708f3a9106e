"""The project's error hierarchy, caught once, in the CLI.

Every error carries a message a user can act on; the CLI prints it on one line and exits with the
status the class names (2 for bad input, 1 for a solve that could not produce an answer).
"""
from __future__ import annotations

from typing import Any

#: The most characters of a user's value an error message quotes (then "..."): a message stays one
#: readable line whatever the value, and quoting never walks a huge value (YAML aliases share objects,
#: so a 1 KB file can hold a list of 10^9 items, whose repr() would never finish).
QUOTE_LIMIT = 60


def shown(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` cut to at most ``limit`` characters plus "...", without building the whole repr."""
    text = _bounded_repr(value, limit + 1)
    return text if len(text) <= limit else text[:limit] + "..."


def _bounded_repr(value: Any, budget: int) -> str:
    """A repr of ``value`` that stops once it is longer than ``budget`` characters."""
    if isinstance(value, str):
        return repr(value[:budget])
    if isinstance(value, dict):
        items = iter(value.items())
        open_, close = "{", "}"
    elif isinstance(value, (list, tuple)):
        items = iter(value)
        open_, close = ("[", "]") if isinstance(value, list) else ("(", ")")
    else:
        text = repr(value) if isinstance(value, (bool, float, type(None))) else _plain(value)
        return text[:budget + 1]
    out = open_
    for i, item in enumerate(items):
        if len(out) > budget:
            return out
        out += ", " if i else ""
        if isinstance(item, tuple) and open_ == "{":
            out += _bounded_repr(item[0], budget - len(out)) + ": "
            out += _bounded_repr(item[1], budget - len(out))
        else:
            out += _bounded_repr(item, budget - len(out))
    return out + close


def _plain(value: Any) -> str:
    """repr() of a scalar; an int of thousands of digits is not converted (Python refuses past 4300)."""
    if isinstance(value, int) and value.bit_length() > 1000:
        return f"<a number of about {int(value.bit_length() * 0.30103)} digits>"
    return repr(value)


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
        super().__init__(located(message, file=file, path=path, line=line))


def located(message: str, *, file: str | None = None, path: str | None = None, line: int | None = None) -> str:
    """``file:line: key.path: message``, leaving out what is not known: how errors and warnings name places."""
    where = []
    if file:
        where.append(f"{file}:{line}" if line else file)
    if path:
        where.append(path)
    return f"{': '.join(where)}: {message}" if where else message


class InputWarning(UserWarning):
    """A value that parses but is implausible for its quantity (``codesign.spec.plausible``): most likely a
    missing or wrong unit. The message names the file, line and key; the command line prints it as one line."""


class InfeasibleError(CodesignError):
    """The problem has no feasible answer; the message says which budget or target fails and by how much."""

    exit_status = 1


class SolverError(CodesignError):
    """The solver failed, or stopped without any feasible answer, for a reason other than infeasibility."""

    exit_status = 1
