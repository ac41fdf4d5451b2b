"""File names that come from data are names inside a folder, never paths.

A results row's key, a cell's file name, a Hub listing's path, an image path
in a shard: each is read from a table, a JSON file or a server, and each is
joined with a folder the program owns. :func:`resolve_under` is the one place
that does the join. It refuses, with the one message :data:`MSG_UNSAFE_NAME`,

- a name that is empty, not text, or holds a control character (NUL included);
- an absolute name (``/etc/passwd``, ``C:\\x``, ``\\\\server\\share``);
- a name with a ``..`` segment (``a/../../b``, ``..\\b``), whether or not it would end inside;
- a name that reaches, through a symbolic link, a place outside the folder;

and returns the joined path otherwise. Nothing is created or read here, so
the check costs one ``resolve`` of the path.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath

from biastest.errors import DataError

__all__ = ["MSG_UNSAFE_NAME", "UnsafeNameError", "resolve_under"]

MSG_UNSAFE_NAME = (
    "The name '{name}' read from {source} does not name a file inside {folder} ({reason}); it was not used."
)
#: At most this many characters of a refused name are quoted in the message.
QUOTE_CHARS = 80

REASON_EMPTY = "it is empty or not text"
REASON_CONTROL = "it holds a control character"
REASON_ABSOLUTE = "it is an absolute path"
REASON_PARENT = "it climbs out of the folder with '..'"
REASON_LINK = "it leads out of the folder through a symbolic link"


class UnsafeNameError(DataError):
    """A name read from data would leave its folder (:data:`MSG_UNSAFE_NAME`)."""


def _quote(name: object) -> str:
    text = str(name).encode("unicode_escape", "backslashreplace").decode("ascii")
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "…"


def _reason(name: object) -> str | None:
    if not isinstance(name, str) or not name.strip():
        return REASON_EMPTY
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return REASON_CONTROL
    if PurePosixPath(name).is_absolute() or PureWindowsPath(name).is_absolute() or name.startswith(("\\", "/")) \
            or PureWindowsPath(name).drive:
        return REASON_ABSOLUTE
    if ".." in name.replace("\\", "/").split("/"):
        return REASON_PARENT
    return None


def resolve_under(folder: str | os.PathLike, name: object, *, source: str) -> Path:
    """``folder / name`` when ``name`` (read from data) names something inside ``folder``.

    Parameters
    ----------
    folder : path
        The folder the name belongs in (itself may be reached through a link).
    name : object
        The name as read (a relative path with ``/`` separators; anything else is refused).
    source : str
        Where the name was read, for the message (``"the results table 'DIR/results.csv'"``).

    Returns
    -------
    pathlib.Path
        ``Path(folder) / name``, not resolved (so the caller can still see a link it chooses not to follow).

    Raises
    ------
    UnsafeNameError
        :data:`MSG_UNSAFE_NAME`, with the reason and at most :data:`QUOTE_CHARS` characters of the name.
    """
    base = Path(folder)
    reason = _reason(name)
    if reason is None:
        target = base / str(name)
        root = base.resolve()
        try:
            target.resolve().relative_to(root)
        except ValueError:
            reason = REASON_LINK
        except (OSError, RuntimeError):  # a link loop: it names nothing usable
            reason = REASON_LINK
        else:
            return target
    raise UnsafeNameError(MSG_UNSAFE_NAME.format(name=_quote(name), source=source, folder=base, reason=reason))
