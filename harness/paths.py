"""Paths the user names: every OSError on one becomes `PATH: REASON; FIX` (UserError, exit status 2).

Outputs are checked before any work starts, so that a bad path costs nothing:

* `output_file` refuses a directory, a path that is also an input, and an existing regular file that
  pulp-odl did not write (`owned` tells), creates the parent directory and proves it writable by
  writing and removing a probe file (read-only or full filesystems fail here, not after an hour).
  Devices (/dev/null, /dev/stdout) pass: they are written in place.
* `output_dir` does the same for a directory that results go into.
* `input_file` and `read_text` turn missing, unreadable, directory and non-UTF-8 inputs into one line.

`user_path` wraps the writes that happen later, so a disk that fills up during a run still ends in
one line; the writers themselves write to a temporary file and rename it (harness.experiments.cache
.write_atomic), so the previous file survives.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Callable, Iterable

from harness.errors import UserError


def reason(err: OSError) -> str:
    return err.strerror or str(err) or type(err).__name__


def error(path, err: OSError, fix: str) -> UserError:
    """The one-line error for an OSError on a user-named path."""
    return UserError(f"{path}: {reason(err)}; {fix}")


def _fix_for(err: OSError, what: str) -> str:
    if err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return f"choose a {what} on a writable filesystem"
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"free some space or choose a {what} on another filesystem"
    if err.errno == errno.ENOTDIR:
        return f"a file is in the way: choose another {what}"
    if err.errno == errno.ENOENT:
        return f"create it or choose another {what}"
    return f"check the {what}"


@contextlib.contextmanager
def user_path(path, what: str = "path", fix: str | None = None):
    """Turn any OSError raised inside the block into `PATH: REASON; FIX`."""
    try:
        yield
    except UserError:
        raise
    except OSError as e:
        if isinstance(e, BrokenPipeError):
            raise
        raise error(getattr(e, "filename", None) or path, e, fix or _fix_for(e, what)) from None


def _is_device(p: Path) -> bool:
    try:
        mode = p.stat().st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()


def refuse_inputs(path, flag: str, inputs: Iterable) -> None:
    for src in inputs:
        if same_file(path, src):
            raise UserError(f"{_label(flag, path)}: is also an input ({src}); choose another output path")


def probe_dir(d: Path, what: str) -> None:
    """Write and remove a small file in `d`: a read-only, full or forbidden directory fails here."""
    try:
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".pulp-odl-probe-")
        try:
            os.write(fd, b"\0" * 512)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(tmp)
    except OSError as e:
        raise error(d, e, _fix_for(e, what)) from None


def make_dir(d: Path, flag: str, what: str = "directory", named=None) -> Path:
    """Create `d` (and its parents). `named` is the path the user gave, when `d` is its directory."""
    d = Path(d)
    named = d if named is None else named
    for up in (d, *d.parents):
        if up.exists():
            if not up.is_dir():
                where = "is not a directory" if up == named else f"{up} is a file, not a directory"
                raise UserError(f"{_label(flag, named)}: {where}; give a directory (or a path that does not exist yet)"
                                if up == named else f"{_label(flag, named)}: {where}; choose another path")
            break
    with user_path(d, what):
        d.mkdir(parents=True, exist_ok=True)
    return d


def output_dir(path, flag: str) -> Path:
    """A directory results are written into: created if missing, proven writable."""
    d = make_dir(Path(path), flag)
    probe_dir(d, "directory")
    return d


def output_file(path, flag: str, *, inputs: Iterable = (), owned: Callable[[Path], bool] | None = None,
                kind: str = "file") -> Path:
    """Check an output file before the work that produces it (see the module docstring)."""
    p = Path(path)
    if str(path) == "":
        raise UserError(f"{flag}: empty path; give a file name")
    refuse_inputs(p, flag, inputs)
    if p.is_dir():
        raise UserError(f"{_label(flag, p)}: is a directory; give a file path")
    if _is_device(p):
        return p
    if p.exists() and owned is not None and not owned(p):
        raise UserError(f"{_label(flag, p)}: exists and is not {kind}; refusing to overwrite it (remove it or choose "
                        "another path)")
    parent = p.parent if str(p.parent) else Path(".")
    make_dir(parent, flag, named=p)
    probe_dir(parent, "path")
    if p.exists():
        with user_path(p, "path"):
            if not os.access(p, os.W_OK):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(p))
    return p


def _label(flag: str, path) -> str:
    return f"{flag} {path}" if flag else str(path)


def input_file(path, flag: str, fix: str | None = None) -> Path:
    """An existing, readable regular file (or device/pipe)."""
    p = Path(path)
    how = f"; {fix}" if fix else ""
    if str(path) == "":
        raise UserError(f"{flag}: empty path; give a file name")
    if p.is_dir():
        raise UserError(f"{_label(flag, p)}: is a directory, not a file; give a file path")
    if not p.exists():
        raise UserError(f"{_label(flag, p)}: no such file{how}")
    with user_path(p, "file", fix or "check the file's permissions"):
        with p.open("rb"):
            pass
    return p


def read_bytes(path, flag: str, fix: str | None = None) -> bytes:
    p = input_file(path, flag, fix)
    with user_path(p, "file", fix or "check the file"):
        return p.read_bytes()


def read_text(path, flag: str, fix: str | None = None) -> str:
    """A UTF-8 text file; a binary or mis-encoded one is a one-line error naming the byte offset."""
    data = read_bytes(path, flag, fix)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{_label(flag, path)}: not UTF-8 text (byte {e.start}); "
                        f"{fix or 'save it as UTF-8'}") from None


# ---- what pulp-odl writes, recognised before it is overwritten ----

def is_elf(p: Path) -> bool:
    try:
        with open(p, "rb") as f:
            head = f.read(4)
    except OSError:
        return False
    return head in (b"\x7fELF", b"")


def starts_with(prefix: str) -> Callable[[Path], bool]:
    """An existing file is ours when empty or when its first line starts with `prefix`."""
    def check(p: Path) -> bool:
        try:
            with open(p, "rb") as f:
                head = f.read(len(prefix.encode()))
        except OSError:
            return False
        return head in (b"", prefix.encode())
    return check


def results_env() -> Path | None:
    """$PULP_ODL_RESULTS, refused when set but empty (it would mean the current directory)."""
    val = os.environ.get("PULP_ODL_RESULTS")
    if val is None:
        return None
    if not val.strip():
        raise UserError("PULP_ODL_RESULTS is set but empty; unset it (results go to results/) or name a directory")
    return Path(val)


def detach_stdout() -> None:
    """After a reader closed our stdout (`| head`): point it at /dev/null, so that nothing more fails
    and the exit status stays ours."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
