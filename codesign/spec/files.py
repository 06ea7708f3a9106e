"""Opening the files a user names: the one rule every input file goes through, and the outputs' checks.

A problem file names other files (``workload.astra``, a solver profile) and the command line names more
(``--solution``, ``--astra-*``). Each is read by ``read_user_file``, which refuses what no input file is:
a device, a pipe or a socket (``/dev/zero`` would be read until memory runs out, a FIFO would block
for ever), a file over ``MAX_INPUT_BYTES``, text that is not UTF-8, and, with ``confine_to`` (the
command line's ``--confine``, for services that run problem files they did not write), any path that
resolves outside that folder, symlinks followed. Every refusal is one SpecError naming the file.

``output_dir`` and ``output_file`` check where results go before any work is done, so that a wrong
``--out`` is a user's mistake (exit 2) found in a second, not an internal error after a long solve.
"""
from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable, Iterable, Iterator
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
    if confine_to is not None and not inside(p, confine_to):
        raise UnreadableFile(f"refused: the {what} is outside {confine_to} (--confine allows only files in the "
                             "problem file's folder)", file=file)
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


def output_dir(path: str | Path, *, flag: str = "--out") -> Path:
    """Create the folder ``path`` (and its parents) for results; SpecError naming ``flag`` and the path if it
    is an existing file or cannot be created."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise SpecError(f"{flag} {p}: expected a folder to write into, but it is an existing file")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SpecError(f"{flag} {p}: cannot create the folder: {e.strerror or e}") from None
    if not os.access(p, os.W_OK | os.X_OK):
        raise SpecError(f"{flag} {p}: expected a folder to write into, but it is not writable")
    return p


def output_file(path: str | Path, *, flag: str = "--out") -> Path:
    """Check that a results file can be written at ``path`` (its folder is created); SpecError naming
    ``flag`` and the path if it is a folder or its folder cannot be made."""
    p = Path(path)
    if p.is_dir():
        raise SpecError(f"{flag} {p}: expected a file name, but it is a folder")
    if p.exists() and not p.is_file():
        raise SpecError(f"{flag} {p}: expected a file name, but it is not a regular file")
    output_dir(p.parent if str(p.parent) else Path("."), flag=flag)
    if p.exists() and not os.access(p, os.W_OK):
        raise SpecError(f"{flag} {p}: expected a file to write, but it is not writable")
    return p


#: The list, in an output folder, of the files codesign wrote there, each with its size and modification time
#: (``name<TAB>bytes<TAB>ns`` a line): what a later run may replace or remove. A file not listed, or changed since
#: codesign wrote it, is the user's, and codesign writes over none of it.
MANIFEST = ".codesign-outputs"

Stamp = tuple[int, int] | None  # (size, mtime in ns); None: being written (a write stopped partway left it)


def _listed(out: Path) -> dict[str, Stamp]:
    entries: dict[str, Stamp] = {}
    try:
        text = (out / MANIFEST).read_text()
    except (OSError, UnicodeDecodeError):
        return entries
    for line in text.split("\n"):
        name, *st = line.split("\t")
        if name:
            entries[name] = (int(st[0]), int(st[1])) if len(st) == 2 and all(x.isdigit() for x in st) else None
    return entries


def _stamp(p: Path) -> tuple[int, int]:
    st = p.stat()
    return st.st_size, st.st_mtime_ns


def _ours(p: Path, entries: dict[str, Stamp]) -> bool:
    """Whether ``p`` is a file codesign wrote and nobody changed since (or one a stopped write left)."""
    return p.name in entries and (entries[p.name] is None or entries[p.name] == _stamp(p))


def _write_list(out: Path, entries: dict[str, Stamp]) -> None:
    (out / MANIFEST).write_text("".join(f"{n}\n" if st is None else f"{n}\t{st[0]}\t{st[1]}\n"
                                        for n, st in sorted(entries.items())))


def claim_outputs(out: Path, names: Iterable[str], *, flag: str = "--out") -> None:
    """Before a command runs: SpecError if a file it may write in ``out`` (``names``) is there and is not codesign's
    (not in ``MANIFEST``, or changed since), or is a symbolic link (writing would follow it out of the folder), as
    is the list itself."""
    entries = _listed(out)
    for n in (MANIFEST, *names):
        p = out / n
        if p.is_symlink():
            raise SpecError(f"{flag} {out}: {n} there is a symbolic link, which codesign does not write through; "
                            "remove it or choose another folder")
        if n != MANIFEST and p.exists() and not _ours(p, entries):
            raise SpecError(f"{flag} {out}: {n} is there and codesign did not write it (or it changed since, or a "
                            f"codesign from before it listed its files in {MANIFEST} wrote it); move it away or "
                            "choose another folder")


def record_outputs(out: Path, names: Iterable[str], write: Callable[[], Iterable[Path]]) -> list[Path]:
    """Run ``write`` (which writes some of ``names`` into ``out`` and returns their paths) with ``names`` listed as
    being written, so that a write stopped partway leaves its files codesign's; then list what it wrote with their
    stamps, and remove those of ``names`` an earlier run left there unchanged that this run did not write (a
    picture of another answer). Returns the paths written."""
    names = list(names)
    entries = _listed(out)
    before = {n: entries.get(n) for n in names if n in entries}
    entries.update({n: None for n in names if not (out / n).exists() or _ours(out / n, entries)})
    _write_list(out, entries)
    written = list(write())
    now = {Path(w).name for w in written}
    for n in set(names) - now:
        p = out / n
        if n in before and p.is_file() and not p.is_symlink() and _ours(p, {n: before[n]}):
            p.unlink()
        entries.pop(n, None)
    entries.update({n: _stamp(out / n) for n in now})
    _write_list(out, entries)
    return written


@contextlib.contextmanager
def writing(out: str | Path, flag: str = "--out") -> Iterator[None]:
    """Turn a failure to write results under ``out`` (a full disk, a folder where a file goes) into a user's
    SpecError naming ``flag`` and the path, not an internal error."""
    try:
        yield
    except OSError as e:
        raise SpecError(f"{flag} {out}: cannot write {e.filename or 'a result'}: {e.strerror or e}") from None
