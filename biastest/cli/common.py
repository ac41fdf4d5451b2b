"""What every command of the command line shares: the parser that raises, choices, output files, progress.

Error messages are constants (``MSG_*``) that the tests assert; none quotes a file's contents or a secret.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from biastest.errors import BiastestError, UsageError
from biastest.inputs import MSG_FILE_UNREADABLE

__all__ = [
    "EXIT_OK",
    "EXIT_RUN_FAILED",
    "EXIT_USAGE",
    "MSG_CANNOT_WRITE",
    "MSG_DID_YOU_MEAN",
    "MSG_NO_OUTPUT_FOLDER",
    "MSG_WROTE",
    "Parser",
    "check_choice",
    "copy_export",
    "output_path",
    "printing_progress",
    "suggest",
    "write_atomic",
]

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_USAGE = 2

MSG_DID_YOU_MEAN = " Did you mean '{suggestion}'?"
MSG_NO_OUTPUT_FOLDER = "The folder '{path}' for the output file does not exist. Create it first."
MSG_CANNOT_WRITE = "The file '{path}' cannot be written ({problem})."
MSG_WROTE = "Wrote {path}"


class Parser(argparse.ArgumentParser):
    """An argument parser that raises :class:`UsageError` instead of exiting, so ``main`` returns the status."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}", usage=self.format_usage())


def suggest(value: str, choices: Sequence[str]) -> str:
    """`` Did you mean 'x'?`` for the closest choice, or the empty string."""
    match = difflib.get_close_matches(str(value).strip().lower(), list(choices), n=1, cutoff=0.5)
    return MSG_DID_YOU_MEAN.format(suggestion=match[0]) if match else ""


def check_choice(value: str, choices: Sequence[str], message: str) -> str:
    """``value`` (lower-cased, stripped) if it is one of ``choices``; else :class:`UsageError` with ``message``."""
    v = str(value).strip().lower()
    if v in choices:
        return v
    raise UsageError(message.format(value=value, hint=suggest(value, choices), choices=", ".join(choices)))


def output_path(value: str, what: str) -> Path:
    """An output file that can be written, checked before anything runs (a missing folder, a folder, read-only)."""
    path = Path(value).expanduser()
    if not path.parent.is_dir():
        raise UsageError(MSG_NO_OUTPUT_FOLDER.format(path=path.parent))
    if path.is_dir():
        raise UsageError(MSG_FILE_UNREADABLE.format(what=what, path=value, problem="it is a folder"))
    try:  # find out now, not after the model ran, whether the folder takes a new file
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(MSG_CANNOT_WRITE.format(path=value, problem=exc.strerror or type(exc).__name__)) from None
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(MSG_CANNOT_WRITE.format(path=value, problem="it is read-only"))
    return path


def write_atomic(target: Path, write: Callable[[Path], None]) -> None:
    """Write ``target`` through ``write(temporary path)`` and an atomic rename: a failure leaves no half file."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise BiastestError(MSG_CANNOT_WRITE.format(path=target, problem=exc.strerror or exc)) from None
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, target)
    except OSError as exc:
        raise BiastestError(MSG_CANNOT_WRITE.format(path=target, problem=exc.strerror or exc)) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def copy_export(make: Callable[[], tuple[Path, Path]]) -> Callable[[Path], None]:
    """A CSV writer that runs the app's export and copies its CSV (the temporary folder is removed)."""

    def write(target: Path) -> None:
        csv_path, _ = make()
        try:
            shutil.copyfile(csv_path, target)
        finally:
            shutil.rmtree(csv_path.parent, ignore_errors=True)

    return write


def printing_progress(enabled: bool, err: Callable[[str], None]) -> Callable[[int, int, str], None] | None:
    """``progress(done, total, message)`` printing ``[done/total] message`` to ``err``, or None when off."""
    if not enabled:
        return None

    def report(done: int, total: int, message: str) -> None:
        err(f"[{done}/{total}] {message}")

    return report
