"""The result cache: one JSON file per kernel result row, keyed by everything the row depends on.

    results/cache/rows/<key>.json           {"key", "spec", "provenance", "seconds", "row"[, "error"]}
    results/cache/provenance/<tree>.json    spec id -> provenance, for one state of the source tree

key = sha256 of the spec (KernelSpec.as_dict) and its provenance: harness.kernels.runner.provenance
(generated source and input data, toolchain, platform file, simulator, backend) plus two items it
does not cover but the ELF depends on: the runtime sources compiled into every kernel program
(pulp_kernels/runtime/) and the compiler flags for the platform. Any change to any of them gives a
new key, so a stale row is never returned; old rows simply stop being read (`rm -rf results/cache`
clears them).

Computing a provenance generates the kernel program and asks the compiler for its version (about
25 ms), which for a thousand kernels is most of a cached rerun. The provenance file memoises it per
"tree digest": a hash of every file the generator, toolchain wrapper and runtime read (harness/,
pulp_kernels/, platforms/*.toml, isa/), the Python and NumPy versions, the toolchain and the
simulator version. Editing any of those files starts a new memo; the rows stay valid wherever the
recomputed provenance is unchanged.

A run that fails for a reason that follows from its inputs (a numeric mismatch, a build or tiling
error: harness.errors.UserError) is cached too, with its `error`, so a rerun reports it again without
rerunning it; any other exception (out of memory, a missing file) is not cached.

Every file is written to a temporary name in its directory and renamed over the target
(os.replace), so a killed run leaves whole files or none. Every row carries the sha256 of its content:
a row that does not parse, does not hold what its name promises or fails its checksum (edited by
hand, damaged on disk) is recomputed, and the run reports it.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform as pyplatform
import re
import tempfile
from functools import lru_cache
from pathlib import Path

from harness import ROOT, paths, toolchain
from harness import platform as platmod
from harness.kernels.spec import KernelSpec

SCHEMA = 2              # 2: every entry carries the sha256 of its content
INDEX_KEEP = 4          # provenance memos kept (newest first); older ones are deleted
_TREE = (("harness", ("*.py",)), ("pulp_kernels", ("*.c", "*.h", "*.S", "*.j2")), ("platforms", ("*.toml",)),
         ("isa", ("*",)))


def results_root() -> Path:
    return paths.results_env() or ROOT / "results"


def canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def checksum(entry: dict) -> str:
    """sha256 of a cache entry's content (everything but the checksum itself)."""
    return sha256(canonical({k: v for k, v in entry.items() if k != "sha256"}))


def spec_id(spec: KernelSpec) -> str:
    return sha256(canonical(spec.as_dict()))[:24]


def row_key(spec: KernelSpec, provenance: dict) -> str:
    return sha256(canonical({"spec": spec.as_dict(), "provenance": provenance}))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()   # what open() would give; mkstemp makes 0600 files


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to a temporary file next to `path`, then rename it over `path`. The temporary file's
    name carries the writer's pid: a writer killed between the two (SIGKILL) leaves it behind, and
    remove_stale_temps knows it for an orphan."""
    path = Path(path)
    if path.exists() and not path.is_file():   # a device (/dev/null): written in place, never renamed over
        path.write_text(text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_TEMP = re.compile(r"^\..+\.(\d+)\.[^.]+\.tmp$")


def remove_stale_temps(d: Path) -> None:
    """Remove the temporary files of write_atomic in `d` whose writer is gone (killed mid-write); the
    files of live writers (another sweep on the same cache) stay."""
    for f in Path(d).glob(".*.tmp"):
        m = _TEMP.match(f.name)
        if not m:
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue                      # the writer still runs
        except ProcessLookupError:
            pass
        except PermissionError:
            continue                      # another user's live process
        f.unlink(missing_ok=True)


def _files_digest(paths) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(str(p.relative_to(ROOT)).encode() + b"\0")
        h.update(p.read_bytes())
    return h.hexdigest()


def _tree_files() -> list[Path]:
    files = set()
    for top, patterns in _TREE:
        for pat in patterns:
            for p in (ROOT / top).rglob(pat):
                if p.is_file() and "__pycache__" not in p.parts \
                        and not (top == "platforms" and "pulpsim" in p.parts):
                    files.add(p)
    return sorted(files)


@lru_cache(maxsize=None)
def runtime_extras(platform: str) -> dict:
    """What every kernel ELF of `platform` depends on besides runner.provenance: runtime sources
    and the compiler flags."""
    from harness import runtime
    plat = platmod.load(platform)
    runtime_files = sorted(p for p in runtime.RUNTIME_DIR.iterdir() if p.is_file())
    return {"runtime_sha256": _files_digest(runtime_files),
            "build_flags": " ".join(toolchain.flags(toolchain.find(), plat, "2"))}


def sources_digest() -> str:
    """The digest of the source tree's files (Python, templates, kernels, runtime, platforms, ISA tables),
    the simulator's own sources excepted."""
    return _files_digest(_tree_files())


def tree_digest(toolchain_desc: str, simulator: str) -> str:
    import numpy
    return sha256(canonical({"files": sources_digest(), "python": pyplatform.python_version(),
                             "numpy": numpy.__version__, "toolchain": toolchain_desc, "simulator": simulator,
                             "schema": SCHEMA}))


def full_provenance(spec: KernelSpec, prepared=None) -> dict:
    """runner.provenance plus runtime_extras: the whole cache key besides the spec. `prepared`
    (runner.prepare) saves generating the kernel again when it is about to run."""
    from harness.kernels import runner
    own = spec.provenance() if hasattr(spec, "provenance") else runner.provenance(spec, prepared)
    return {**own, **runtime_extras(spec.platform)}


class Cache:
    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root is not None else results_root() / "cache"
        self.rows_dir = self.root / "rows"
        self.index_dir = self.root / "provenance"

    # ---- rows ----
    def row_path(self, key: str) -> Path:
        return self.rows_dir / f"{key}.json"

    def load(self, key: str) -> dict | None:
        """The cached entry for `key`, or None when absent or unusable (see `lookup`)."""
        return self.lookup(key)[0]

    def lookup(self, key: str) -> tuple[dict | None, str | None]:
        """(entry, problem). The entry holds a good row, or the `error` of a run that failed
        deterministically; it is None when absent, of an older schema, or damaged. `problem` says why
        a file that exists was not used when it was damaged (it does not parse, does not hold what its
        name promises, or its content no longer matches its checksum): the caller recomputes the row
        and reports it."""
        path = self.row_path(key)
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None, None
        except OSError as e:
            return None, f"unreadable ({e.strerror})"
        try:
            entry = json.loads(text)
        except ValueError:
            return None, "does not parse as JSON"
        if not isinstance(entry, dict):
            return None, "is not a cache entry"
        if entry.get("schema") != SCHEMA:
            return None, None          # written by an older pulp-odl: silently replaced
        if entry.get("key") != key:
            return None, "holds another key than its name"
        if entry.get("sha256") != checksum(entry):
            return None, "fails its checksum (edited or damaged)"
        if isinstance(entry.get("error"), str):
            return entry, None
        row = entry.get("row")
        if not isinstance(row, dict) or row.get("ok") is not True or not isinstance(row.get("cycles"), int):
            return None, "holds no usable row"
        return entry, None

    def store(self, key: str, spec: KernelSpec, provenance: dict, row: dict | None, seconds: float,
              error: str | None = None) -> dict:
        entry = {"schema": SCHEMA, "key": key, "spec": spec.as_dict(), "provenance": provenance,
                 "seconds": round(seconds, 3), "row": row}
        if error is not None:
            entry["error"] = error
        entry["sha256"] = checksum(entry)
        write_atomic(self.row_path(key), json.dumps(entry))
        return entry

    # ---- provenance memo ----
    def load_index(self, digest: str) -> dict:
        try:
            index = json.loads((self.index_dir / f"{digest}.json").read_text())
        except (OSError, ValueError):
            return {}
        return index if isinstance(index, dict) else {}

    def store_index(self, digest: str, index: dict) -> None:
        write_atomic(self.index_dir / f"{digest}.json", json.dumps(index, sort_keys=True))
        memos = sorted(self.index_dir.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in memos[INDEX_KEEP:]:
            old.unlink(missing_ok=True)
