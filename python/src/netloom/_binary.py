"""Finding the ``netloom`` program and running it, turning its error line into an exception."""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Type, Union

from .errors import BinaryNotFound, NetloomError, Timeout, TopologyError, UsageError

PathLike = Union[str, "os.PathLike[str]"]

#: The environment variable naming the binary when it is not on ``PATH``.
ENV_VAR = "NETLOOM"


def find_binary(binary: Optional[PathLike] = None) -> str:
    """The ``netloom`` program to run: ``binary`` if given, else ``$NETLOOM``, else the one the
    wheel installed into this environment's scripts directory, else ``netloom`` on ``PATH``.
    Raises :class:`BinaryNotFound` naming all four when none is found."""
    if binary is not None:
        return _executable(str(binary), "the binary= argument")
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return _executable(from_env, f"${ENV_VAR}")
    # Before PATH: a venv's python run without activating the venv has its scripts directory off
    # PATH, and a netloom found there is the one installed with this package, of its version,
    # where PATH may hold another (docs/python.md, "Finding the netloom program").
    beside = _beside_package()
    if beside:
        return beside
    on_path = shutil.which("netloom")
    if on_path:
        return on_path
    scripts = scripts_dir() or "the environment's scripts directory"
    raise BinaryNotFound(
        "netloom: the netloom program was not found: pass binary='/path/to/netloom', "
        f"set ${ENV_VAR}=/path/to/netloom, install the netloom wheel (its binary goes to "
        f"{scripts}), or put netloom on PATH "
        "(build it with `cargo build --release -p netloom`; it is target/release/netloom)"
    )


def scripts_dir() -> Optional[str]:
    """The scripts directory of the running interpreter's environment (a venv's ``bin``), where
    installing the wheel puts its ``netloom``."""
    return sysconfig.get_path("scripts")


def _beside_package() -> Optional[str]:
    directory = scripts_dir()
    if not directory:
        return None
    candidate = os.path.join(directory, "netloom")
    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return candidate
    return None


def _executable(path: str, where: str) -> str:
    found = shutil.which(path) if os.sep not in path else path
    if found and os.path.isfile(found) and os.access(found, os.X_OK):
        return found
    raise BinaryNotFound(
        f"netloom: {where} names {path!r}, which is not an executable file; pass binary=..., "
        f"set ${ENV_VAR}, install the netloom wheel, or put netloom on PATH"
    )


def options_to_flags(options: Dict[str, object]) -> List[str]:
    """Keyword options as command-line flags: ``no_gso=True`` → ``--no-gso``,
    ``late_threshold="50us"`` → ``--late-threshold 50us``; ``False`` and ``None`` are left out;
    a list repeats the flag."""
    flags: List[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            flags.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                flags += [flag, str(item)]
        else:
            flags += [flag, str(value)]
    return flags


def error_line(stderr: str) -> str:
    """netloom's own error: the lines of its standard error that say what was wrong (every
    `netloom: ` line, or the whole text for a usage message), without the progress lines."""
    lines = [line for line in stderr.replace("\r", "\n").splitlines() if line.strip()]
    said = [line for line in lines if line.startswith("netloom: ") or line.startswith("error: ")]
    kept = said or lines
    return "\n".join(kept) if kept else "netloom failed without a message"


def classify(message: str, topology_files: Iterable[str] = ()) -> Type[NetloomError]:
    """A topology problem names the file (``FILE:LINE: ...``); anything else is a usage error."""
    first = message.split("\n", 1)[0]
    body = first[len("netloom: ") :] if first.startswith("netloom: ") else first
    for path in topology_files:
        for name in {path, os.path.basename(path)}:
            if name and body.startswith(name):
                return TopologyError
    return UsageError


def run_netloom(
    args: Sequence[str],
    *,
    binary: Optional[PathLike] = None,
    topology_files: Sequence[str] = (),
    rename: Optional[Dict[str, str]] = None,
    timeout: Optional[float] = None,
    cwd: Optional[PathLike] = None,
) -> "subprocess.CompletedProcess[str]":
    """Runs ``netloom ARGS`` and returns it when it succeeds; on failure raises the exception
    its message calls for, with netloom's message (``rename`` maps temporary file names in it
    back to the names the caller knows)."""
    program = find_binary(binary)
    try:
        done = subprocess.run(
            [program, *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
        )
    except subprocess.TimeoutExpired as err:
        raise Timeout(
            f"netloom: `netloom {' '.join(args)}` did not finish within {timeout} s"
        ) from err
    if done.returncode != 0:
        message = error_line(done.stderr)
        for temporary, known in (rename or {}).items():
            message = message.replace(temporary, known)
        kind = classify(message, [*topology_files, *(rename or {}).values()])
        raise kind(message)
    return done


def version(binary: Optional[PathLike] = None) -> str:
    """The version of the netloom program, as ``netloom --version`` prints it (``0.1.0``)."""
    out: str = run_netloom(["--version"], binary=binary, timeout=30).stdout.strip()
    return out.split()[-1] if out else out


def as_path(path: PathLike) -> str:
    """A path as a string (``Path`` and ``str`` alike)."""
    return str(Path(path))
