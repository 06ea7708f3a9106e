"""Opening the files a user names: the one rule every input file goes through, and the outputs' checks.

A problem file names other files (``workload.astra``, a solver profile) and the command line names more
(``--solution``, ``--astra-*``). Each is read by ``read_user_file``, which refuses what no input file is:
a device, a pipe or a socket (``/dev/zero`` would be read until memory runs out, a FIFO would block
for ever), a file over ``MAX_INPUT_BYTES``, text that is not UTF-8, and, with ``confine_to`` (the
command line's ``--confine``, for services that run problem files they did not write), any path that
resolves outside that folder, symlinks followed. Every refusal is one SpecError naming the file.

Where results go is ``outputs``'s job, the other half of the rule: nothing a user made is read past its
folder, and nothing a user made is written over.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from ..errors import SpecError

#: The largest input file read, in bytes (64 MiB). The largest shipped input (an ASTRA-sim workload) is
#: a few KiB; a file this large is a wrong path, and reading it whole would cost that much memory.
MAX_INPUT_BYTES = 64 * 2**20


class UnreadableFile(SpecError):
    """A file that could not be read at all (missing, refused, not text), as opposed to one read and found
    wrong: a caller that took the path from a key re-raises it against that key."""


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` resolves (symlinks followed) to ``folder`` or somewhere below it."""
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def confined(path: str | Path, *, what: str, confine_to: Path | None) -> None:
    """UnreadableFile if ``confine_to`` is a folder and ``path`` resolves outside it, the same whether or not
    anything is there: a path is checked before anything at it is opened, listed or probed, so that neither the
    answer nor its wording tells a problem file's author what exists outside its folder."""
    if confine_to is not None and not inside(Path(path), confine_to):
        raise UnreadableFile(f"refused: the {what} is outside {confine_to} (--confine allows only files in the "
                             "problem file's folder)", file=str(path))


def read_user_file(path: str | Path, *, what: str, confine_to: Path | None = None) -> str:
    """The text of a file a user named. ``what`` names it in messages ("workload file"); ``confine_to``
    refuses a path outside that folder. Raises UnreadableFile (a SpecError naming the file) for anything
    but a readable, regular, UTF-8 file of at most MAX_INPUT_BYTES."""
    data = read_user_bytes(path, what=what, confine_to=confine_to)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UnreadableFile(f"cannot read: not UTF-8 text (byte {e.start + 1}); expected a {what}",
                             file=str(path)) from None


def read_user_bytes(path: str | Path, *, what: str, confine_to: Path | None = None) -> bytes:
    """The bytes of a file a user named (a binary input, such as a Chakra trace), under ``read_user_file``'s
    rules but for the UTF-8 one."""
    file = str(path)
    p = Path(path)
    confined(p, what=what, confine_to=confine_to)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below as not a regular file.
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise UnreadableFile(f"{what} not found", file=file) from None
    except IsADirectoryError:
        raise UnreadableFile(f"is a directory, expected a {what}", file=file) from None
    except OSError as e:
        raise UnreadableFile(f"cannot read the {what}: {e.strerror or e}", file=file) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise UnreadableFile(f"is a directory, expected a {what}", file=file)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(f"not a regular file (a device, pipe or socket); expected a {what}", file=file)
        if st.st_size > MAX_INPUT_BYTES:
            raise UnreadableFile(f"{st.st_size / 2**20:.0f} MiB is over the {MAX_INPUT_BYTES // 2**20} MiB an input "
                                 f"file may have; expected a {what}", file=file)
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_INPUT_BYTES + 1)  # bounded even if the file grows while it is read
    except OSError as e:
        raise UnreadableFile(f"cannot read the {what}: {e.strerror or e}", file=file) from None
    finally:
        os.close(fd)
    if len(data) > MAX_INPUT_BYTES:
        raise UnreadableFile(f"over the {MAX_INPUT_BYTES // 2**20} MiB an input file may have; expected a {what}",
                             file=file)
    return data


def parse_json(text: str, file: str, what: str) -> Any:
    """``text`` (read by ``read_user_file``) as JSON; SpecError naming the file and line if it is not JSON,
    or nests too deep for Python's decoder (which recurses), or holds an integer too long to convert."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise SpecError(f"not a {what}: invalid JSON: {e.msg} (column {e.colno})", file=file, line=e.lineno) from None
    except RecursionError:
        raise SpecError(f"not a {what}: JSON nested too deep", file=file) from None
    except ValueError as e:  # e.g. an integer of more than 4300 digits
        raise SpecError(f"not a {what}: {str(e)[:80]}", file=file) from None
