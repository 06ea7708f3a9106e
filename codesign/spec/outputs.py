"""Where results go: the one layer every command that writes goes through, so that nothing a user made is written
over, by any command.

Its guarantees, for every file codesign writes (``solve --out``, ``simulate --out``, ``export-chakra --out``,
``reproduce --out``, ``pareto --out/--csv``, a sweep's plots; a sweep's results CSV has its own rule, below):

- A wrong place (an existing file where a folder goes, a folder where a file goes, a folder that cannot be made)
  is refused before any work (``output_dir``, ``output_file``): a user's mistake, exit 2, found in a second.
- A file of the user's is never replaced. codesign lists what it wrote in a folder, with each file's size,
  modification time and inode, in that folder's ``MANIFEST``; a file there that is not listed, or changed since, is the
  user's. It is refused before any work (``claim_outputs``, ``claim_file``) and again at the moment of writing
  (``write_output``): a file saved there during a long solve is kept, the write is refused (``Refused``, exit 2)
  and the command still prints its answer and names the file it did not write.
- Never through a symbolic link: a link where a result (or the list) goes is refused, not followed.
- Every file is written whole or not at all: to a temporary file beside it, created exclusively (``O_EXCL``, so a
  link planted at its name is never followed), then moved into place atomically; a name that was free is taken
  with ``link``, which fails rather than replace a file that appeared meanwhile. A full disk or any other failure
  to write leaves the file as it was and is one line naming the file (``SpecError``, exit 2), not a traceback.

A sweep's results CSV (``explore.results``) is appended to row by row and resumed, so it is not listed: a file
there is taken for one only if its header is a results file's, and is otherwise refused, never rewritten; it is
rewritten through ``replace_file`` as every other result is written.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from ..errors import SpecError
from .files import read_user_file

#: The list, in an output folder, of the files codesign wrote there, each with its size, modification time and
#: inode (``name<TAB>bytes<TAB>ns<TAB>inode`` a line, or without the inode from an older codesign; a later line
#: of a name counts, a line of the name alone unlists it): what a later run may replace or remove. A file not
#: listed, or changed since codesign wrote it, is the user's, and codesign writes over none of it. Each write
#: appends its line (a thousand traces cost a thousand short appends, not a thousand rewrites); a command's last
#: write rewrites the list compactly.
MANIFEST = ".codesign-outputs"

#: What writes one result: given the open (binary) temporary file, it writes the file's whole content.
Fill = Callable[[IO[bytes]], Any]

Stamp = tuple[int, int, int]  # (size in bytes, modification time in ns, inode; -1: not listed, an older list)


def _stamp(st: os.stat_result) -> Stamp:
    # the inode too: a file put in place of codesign's with the same size and time (a copy keeping its times,
    # ``cp -p``, ``rsync -t``) is another file, and the user's
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _same(listed: Stamp | None, st: os.stat_result) -> bool:
    return listed is not None and listed[:2] == (st.st_size, st.st_mtime_ns) and listed[2] in (-1, st.st_ino)

_THEIRS = (f"is there and codesign did not write it (or it changed since, or a codesign from before it listed its "
           f"files in {MANIFEST} wrote it)")
_LINK = "is a symbolic link, which codesign does not write through"


class Refused(SpecError):
    """A result not written because a file of the user's (or a symbolic link) is where it goes: found at the moment
    of writing, after the checks before the work passed. The command still gives the rest of its answer."""


# ---------------------------------------------------------------- before any work

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
    ``flag`` and the path if it is a folder, a symbolic link or not writable, or its folder cannot be made."""
    p = Path(path)
    if p.is_symlink():
        raise SpecError(f"{flag} {p}: {_LINK}; remove it or choose another name")
    if p.is_dir():
        raise SpecError(f"{flag} {p}: expected a file name, but it is a folder")
    if p.exists() and not p.is_file():
        raise SpecError(f"{flag} {p}: expected a file name, but it is not a regular file")
    output_dir(_folder(p), flag=flag)
    if p.exists() and not os.access(p, os.W_OK):
        raise SpecError(f"{flag} {p}: expected a file to write, but it is not writable")
    return p


def claim_file(path: str | Path, *, flag: str = "--out") -> Path:
    """``output_file``, and the file, if it is there, must be one codesign wrote (listed in its folder's
    ``MANIFEST``, unchanged): a picture or CSV a command writes whole, never the user's of the same name."""
    p = output_file(path, flag=flag)
    why = _why_not(p, _listed(_folder(p)))
    if why:
        raise SpecError(f"{flag} {p}: {why}; move it away or choose another name")
    return p


def claim_outputs(out: Path, names: Iterable[str], *, flag: str = "--out") -> None:
    """Before a command runs: SpecError if a file it may write in ``out`` (``names``) is there and is not codesign's
    (not in ``MANIFEST``, or changed since), or is a symbolic link (writing would follow it out of the folder), as
    is the list itself."""
    entries = _listed(out)
    for n in (MANIFEST, *names):
        p = out / n
        if p.is_symlink():
            raise SpecError(f"{flag} {out}: {n} there {_LINK}; remove it or choose another folder")
        if n != MANIFEST and (why := _why_not(p, entries)):
            raise SpecError(f"{flag} {out}: {n} {why}; move it away or choose another folder")


# ---------------------------------------------------------------- at the moment of writing

def write_output(path: Path, fill: Fill, *, flag: str = "--out", named: Path | None = None,
                 compact: bool = True, listed: dict[str, Stamp] | None = None) -> Path:
    """Write one result at ``path`` with ``fill``, under the module's guarantees, and list it in its folder's
    ``MANIFEST``. ``named``: what ``flag`` named (the folder, for ``solve --out``; default ``path`` itself), for
    messages. Raises Refused if a file of the user's or a link is at ``path`` now, SpecError if it cannot be
    written (a full disk); either way ``path`` is as it was. ``compact``: rewrite the list once written (a caller
    writing many files does it after the last, and may pass ``listed``, the list as it holds it, kept up to date
    here, so that the list is not read again for each file). Returns ``path``."""
    folder = _folder(path)
    where = f"{flag} {named}: {path.name}" if named is not None and named != path else f"{flag} {path}:"
    try:
        tmp = _fill_temporary(path, fill)
    except OSError as e:
        raise SpecError(f"{flag} {named or path}: cannot write {path.name}: {e.strerror or e}; nothing there was "
                        "overwritten") from None
    with writing(named or path, flag):
        try:
            entries = _listed(folder) if listed is None else listed
            if (folder / MANIFEST).is_symlink():
                raise Refused(f"{flag} {named or path}: {MANIFEST} there {_LINK}; remove it or choose another folder")
            if why := _why_not(path, entries):
                raise Refused(f"{where} {why}; it is kept, and codesign's {path.name} was not written")
            old = entries.get(path.name)
            st = os.stat(tmp)
            _relist(folder, path.name, _stamp(st))  # listed first: a file in place is listed
            try:
                _place(tmp, path, replace=os.path.lexists(path))
            except BaseException:
                _relist(folder, path.name, old)
                raise
            entries[path.name] = _stamp(st)
        except FileExistsError:
            raise Refused(f"{where} appeared while codesign wrote it, and codesign did not write it; it is kept, "
                          f"and codesign's {path.name} was not written") from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    if compact:
        _compact(folder)
    return path


def replace_file(path: Path, fill: Fill, *, sync: bool = True) -> None:
    """Write ``path`` whole with ``fill`` through an exclusively created temporary file beside it, then rename it
    into place (a link at ``path`` is replaced by the file, never written through). For a file whose ownership its
    writer has checked by its content (a sweep's results CSV); raises OSError, leaving ``path`` as it was.
    ``sync``: flush it to the disk before the rename (so a power cut leaves the old file or the new one)."""
    tmp = _fill_temporary(path, fill, sync=sync)
    try:
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def record_outputs(out: Path, names: Iterable[str], files: Mapping[str, Fill], *, flag: str = "--out") -> list[Path]:
    """Write ``files`` (name -> fill, some of ``names``) into ``out``, each with ``write_output``, going on past one
    refused; then remove those of ``names`` an earlier run left there unchanged that this run did not write (a
    picture of another answer). Returns the paths written; raises Refused naming every file not written."""
    before = _listed(out)
    now = dict(before)
    written, refused = [], []
    for n, fill in files.items():
        try:
            written.append(write_output(out / n, fill, flag=flag, named=out, compact=False, listed=now))
        except Refused as e:
            refused.append(e)
    for n in set(names) - set(files):
        p = out / n
        if n in before and p.is_file() and not p.is_symlink() and not _why_not(p, before):
            with writing(out, flag):
                p.unlink()
                _relist(out, n, None)
    _compact(out)
    if refused:
        raise Refused("; ".join([str(refused[0]), *(str(e).split(": ", 1)[-1] for e in refused[1:])]))
    return written


@contextlib.contextmanager
def writing(out: str | Path, flag: str = "--out") -> Iterator[None]:
    """Turn a failure to write results under ``out`` (a full disk, a folder where a file goes) into a user's
    SpecError naming ``flag`` and the path, not an internal error."""
    try:
        yield
    except OSError as e:
        what = Path(e.filename).name if e.filename else "a result"
        if what.startswith(".") and what.endswith(".tmp"):  # (a temporary file's name says nothing to the user)
            what = "a result"
        raise SpecError(f"{flag} {out}: cannot write {what}: {e.strerror or e}; nothing there was overwritten") \
            from None


# ---------------------------------------------------------------- the parts

def _folder(p: Path) -> Path:
    return p.parent if str(p.parent) else Path(".")


def _listed(out: Path) -> dict[str, Stamp]:
    """The manifest's entries; a line without a stamp (a codesign from before it wrote whole files) lists
    nothing."""
    entries: dict[str, Stamp] = {}
    try:
        if (out / MANIFEST).is_symlink():
            return entries
        text = read_user_file(out / MANIFEST, what="list of codesign's outputs")  # (a FIFO there must not block)
    except (OSError, SpecError):
        return entries
    for line in text.split("\n")[:-1]:  # (a torn last line, from a full disk, lists nothing)
        name, *st = line.split("\t")
        if name and len(st) in (2, 3) and all(x.isdigit() for x in st):
            entries[name] = (int(st[0]), int(st[1]), int(st[2]) if len(st) == 3 else -1)
        else:
            entries.pop(name, None)
    return entries


def _why_not(p: Path, entries: Mapping[str, Stamp]) -> str | None:
    """Why codesign may not write ``p`` (a link, or a file of the user's there), or None if it may: nothing is
    there, or a file codesign wrote and nobody changed since."""
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return _LINK
    if stat.S_ISREG(st.st_mode) and _same(entries.get(p.name), st):
        return None
    return _THEIRS


def _write_list(out: Path, entries: Mapping[str, Stamp]) -> None:
    text = "".join(f"{n}\t{_fields(st)}\n" for n, st in sorted(entries.items()))
    # (not synced: a list lost to a power cut makes codesign's files look the user's, and refuses them; it is
    # written once per file, and an fsync each costs more than the file when --all-npus writes a thousand)
    replace_file(out / MANIFEST, lambda f: f.write(text.encode()), sync=False)


def _fields(stamp: Stamp) -> str:
    return "\t".join(str(x) for x in (stamp if stamp[2] >= 0 else stamp[:2]))


def _relist(out: Path, name: str, stamp: Stamp | None) -> None:
    """Set (or, with None, drop) one entry of the manifest: a line appended (never through a link)."""
    line = f"{name}\n" if stamp is None else f"{name}\t{_fields(stamp)}\n"
    fd = os.open(out / MANIFEST, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        data = line.encode()
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def _compact(out: Path) -> None:
    """The manifest rewritten with one line per listed file; skipped if it cannot be (it is only shorter)."""
    with contextlib.suppress(OSError):
        if not (out / MANIFEST).is_symlink():
            _write_list(out, _listed(out))


def _fill_temporary(path: Path, fill: Fill, *, sync: bool = True) -> Path:
    """A new file beside ``path`` (a random hidden name, created with O_EXCL: never an existing file or link)
    holding what ``fill`` wrote, flushed to the disk; removed again if ``fill`` fails."""
    folder = _folder(path)
    while True:
        tmp = folder / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                         | getattr(os, "O_CLOEXEC", 0), 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            fill(f)
            f.flush()
            if sync:
                os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return tmp


def _place(tmp: Path, path: Path, *, replace: bool) -> None:
    """Move ``tmp`` to ``path``: over the file there (checked as codesign's), or into a free name with ``link``,
    which raises FileExistsError rather than replace a file that appeared since the check."""
    if replace:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError:  # a file system without hard links: the name was free a moment ago
        if os.path.lexists(path):
            raise FileExistsError(path) from None
        os.replace(tmp, path)
