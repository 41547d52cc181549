"""One way to write every output file: whole or not at all, and never over a device.

A checkpoint, a translation, a score, an exported model: each is written by
:func:`open_output` (a file) or :func:`output_folder` (a folder of files), by these rules.

* A regular file, or a name not there yet, is written into a temporary file beside it
  (``.<name>.<random>.tmp``), flushed to disk and renamed into place when complete. A
  reader sees the old file or the new one, never a half-written one; on a failure the old
  file is untouched; of two writers at once, the one that finishes last leaves its whole
  file (a symbolic link to a regular file is kept: the file it names is replaced).
* Anything else is written directly, never replaced: a device (``/dev/null``), a FIFO or
  pipe, and this process's own standard output or error (``/dev/stdout``, also when it is
  redirected into a regular file).
* Every write is checked: a failure, a full disk included, raises ``OSError`` naming the
  file (the command line turns it into one line and exit status 2).
* Opening is the check: commands open their outputs before the work starts, so a folder
  that cannot be written fails at once, not after an hour of decoding.
* A temporary file or folder is locked (``flock``) by the process writing it, and the
  lock dies with the process. One whose lock is free was left by a run that failed or was
  killed: the next output to the same name removes it (:func:`remove_leftovers`).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import os
import re
import secrets
import shutil
import stat
import sys
from pathlib import Path
from typing import Callable

__all__ = ["Output", "open_output", "output_folder", "remove_leftovers", "write_output"]

_TMP = re.compile(r"^\..+\.[0-9a-z]+\.tmp$")


_HELD: set[int] = set()          # descriptors of this process's locked temporaries


def _forget_held() -> None:
    """In a forked child (a worker pool): close the inherited locked descriptors, so the
    locks end with the process that took them, not with its longest-lived child."""
    for fd in list(_HELD):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_held)


def _release(fd: int) -> None:
    _HELD.discard(fd)
    os.close(fd)


def _named(exc: OSError, path) -> OSError:
    """``exc`` naming ``path`` (an error of a write names no file)."""
    if exc.errno is None or exc.filename == str(path):
        return exc
    return OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(path))


def _temporary_name(target: Path) -> Path:
    return target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")


def _lock(fd: int, block: bool = False) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
        return True
    except BlockingIOError:
        return False


def _same(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        a, b = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _create_locked(target: Path, folder: bool) -> tuple[Path, int]:
    """A new temporary file or folder beside ``target``, locked by this process: (path, fd).
    A leftover sweep of another process may remove it between its creation and the lock;
    then it is made again."""
    while True:
        tmp, fd = _temporary_name(target), None
        try:
            if folder:
                os.mkdir(tmp, 0o700)
                fd = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            else:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            _lock(fd, block=True)
            if _same(fd, tmp):
                _HELD.add(fd)
                return tmp, fd
        except BaseException:                        # Ctrl-C, or the folder is not writable
            if fd is not None:
                os.close(fd)
                _remove(tmp)
            raise
        os.close(fd)                                 # swept away before it was locked


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def remove_leftovers(folder: str | os.PathLike, name: str | None = None) -> list[Path]:
    """Remove the temporary files and folders in ``folder`` (of output ``name``, or of any
    output) that no running process holds: what a failed or killed run left behind.
    Returns what was removed."""
    folder = Path(folder)
    pattern = f".{glob.escape(name)}.*.tmp" if name else ".*.tmp"
    removed = []
    for path in folder.glob(pattern):
        if not _TMP.match(path.name):
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:                              # gone, or a link: not ours
            continue
        try:
            if not _lock(fd) or not _same(fd, path):
                continue                             # being written now, or replaced
            _remove(path)
            removed.append(path)
        finally:
            os.close(fd)
    return removed


def _fsync_folder(folder: Path) -> None:
    try:                                             # make a rename itself durable
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


class _File:
    """The file-like face of an :class:`Output`, for writers such as ``torch.save``."""

    def __init__(self, output: "Output"):
        self.output = output

    def write(self, data) -> int:
        self.output.write(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass


class Output:
    """One output being written; made by :func:`open_output`. ``write`` bytes or text
    (UTF-8); ``commit`` puts it in place; ``discard`` leaves the old file as it was. As a
    context manager it commits when the block ends normally, else discards."""

    def __init__(self, path: str | os.PathLike | None, make_parents: bool = False):
        self.path = Path(path) if path is not None else None
        self.tmp: Path | None = None
        self.fd: int | None = None
        self.stream = None                         # a Python text stream (stdout)
        self.kind = None
        self.done = False
        self.before = None
        self._error: OSError | None = None
        if path is None:
            self.kind, self.stream = "stream", sys.stdout
            return
        try:
            self._open(make_parents)
        except OSError as exc:
            self._discard()
            raise _named(exc, self.path) from None
        except BaseException:                      # Ctrl-C: no temporary file stays
            self._discard()
            raise

    def _open(self, make_parents: bool) -> None:
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            info = None
        for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
            try:
                mine = os.fstat(fd)
            except OSError:
                continue
            if info is not None and (info.st_dev, info.st_ino) == (mine.st_dev, mine.st_ino):
                self.kind, self.fd = "own", fd           # /dev/stdout: written, not opened
                self.before = stream                     # whose buffer goes out first
                return
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(self.path))
        if info is not None and not stat.S_ISREG(info.st_mode):
            self.kind = "direct"                         # a device, a FIFO, a socket
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CLOEXEC)
            return
        self.kind = "atomic"
        target = Path(os.path.realpath(self.path)) if info is not None else self.path
        if make_parents:
            target.parent.mkdir(parents=True, exist_ok=True)
        self.target = target
        self.tmp, self.fd = _create_locked(target, folder=False)
        remove_leftovers(target.parent, target.name)     # of an earlier run, if any

    # ------------------------------------------------------------------ writing
    def write(self, data: bytes | str) -> None:
        """Write all of ``data``; an error raises ``OSError`` naming the file."""
        if isinstance(data, str):
            if self.stream is not None:
                self.stream.write(data)
                self.stream.flush()
                return
            data = data.encode("utf-8")
        elif self.stream is not None:
            self.stream.flush()
            self.stream.buffer.write(data)
            self.stream.buffer.flush()
            return
        if self.before is not None:
            with contextlib.suppress(Exception):
                self.before.flush()
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view):]
        except OSError as exc:
            self._error = _named(exc, self.path)
            raise self._error from None

    @property
    def file(self) -> _File:
        """A file object whose writes are :meth:`write`."""
        return _File(self)

    def write_with(self, writer: Callable) -> None:
        """``writer(file)``, for a writer that wraps the file's errors in its own (as
        ``torch.save`` does: "unexpected pos 64 vs 0"): the error of the write is raised."""
        try:
            writer(self.file)
        except Exception:
            if self._error is not None:
                raise self._error from None
            raise

    # ------------------------------------------------------------------ ending
    def commit(self) -> Path | None:
        """Put what was written in place (a regular file: flushed, then renamed over the
        old one); once only, later calls do nothing."""
        if self.done:
            return self.path
        self.done = True
        try:
            if self.kind == "atomic":
                try:
                    os.fsync(self.fd)
                    os.replace(self.tmp, self.target)   # still locked: no sweep takes it
                except BaseException:
                    self._discard()
                    raise
                fd, self.fd, self.tmp = self.fd, None, None
                _release(fd)
                _fsync_folder(self.target.parent)
            elif self.kind == "direct":
                fd, self.fd = self.fd, None
                os.close(fd)                            # its error, too, is checked
        except OSError as exc:
            raise _named(exc, self.path) from None
        return self.path

    def discard(self) -> None:
        """Leave the old file (if any) as it was: the temporary file is removed."""
        if not self.done:
            self.done = True
            self._discard()

    def _discard(self) -> None:
        if self.fd is not None and self.kind in ("atomic", "direct"):
            with contextlib.suppress(OSError):
                _release(self.fd)
            self.fd = None
        if self.tmp is not None:
            self.tmp.unlink(missing_ok=True)

    def __enter__(self) -> "Output":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()


def open_output(path: str | os.PathLike | None, make_parents: bool = False) -> Output:
    """An :class:`Output` for ``path`` (``None``: standard output), opened now: a folder
    that cannot be written raises ``OSError`` naming ``path`` here, before any work.
    ``make_parents``: create missing folders above it."""
    return Output(path, make_parents=make_parents)


def write_output(path: str | os.PathLike, data: bytes | str | Callable) -> Path:
    """Write ``data`` to ``path`` by the rules of this module and return the path.
    ``data``: bytes, text, or a function that writes into a binary file object (so a
    large state streams to disk without a copy in memory). Missing folders are created."""
    with open_output(path, make_parents=True) as out:
        if callable(data):
            out.write_with(data)
        else:
            out.write(data)
    return Path(path)


@contextlib.contextmanager
def output_folder(path: str | os.PathLike, replace: bool = True):
    """Yield a temporary folder beside ``path`` to write a folder of outputs into; when
    the block ends normally its files are put in place: the folder is renamed to ``path``
    when ``path`` is absent or empty, else each file replaces its namesake (the others in
    ``path`` stay), or, with ``replace=False``, ``FileExistsError`` is raised and ``path``
    is left as another writer put it. On an error the temporary folder is removed and
    ``path`` is as it was."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp, fd = _create_locked(path, folder=True)
    except OSError as exc:
        raise _named(exc, path) from None
    try:
        remove_leftovers(path.parent, path.name)
        yield tmp
        os.chmod(tmp, 0o755)
        try:
            os.rename(tmp, path)                        # absent or empty: whole at once
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            if not replace:
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST),
                                      str(path)) from None
            names = sorted(p.name for p in tmp.iterdir())
            for name in sorted(names, key=lambda n: n == "manifest.json"):   # last
                os.replace(tmp / name, path / name)
        _fsync_folder(path.parent)
    finally:
        _release(fd)
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
