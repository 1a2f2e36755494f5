"""Opening a run bundle that came from someone else: what it may hold, checked before any of
it is inflated or written.

A bundle is a zip file, and a reviewer replays a stranger's, so nothing in it is trusted:

* **Member names** are relative paths of plain segments: no absolute path, ``..``, ``.``,
  empty segment (``data/0//etc``), backslash, drive or stream (``C:``, ``a:b``), or Windows
  device name (``NUL``, ``CON``, ``COM1``…); each name appears once. A replay writes the
  dataset files of a bundle (``data/<i>/…``) only under its own folder
  (:func:`target_under`).
* **Entries** are plain files (or folders): a symbolic link or other special file (the Unix
  mode in ``ZipInfo.external_attr``), an encrypted member, or a compression other than stored
  or deflated is refused.
* **Sizes** are read from the zip's central directory before a byte is inflated: at most
  :data:`MAX_MEMBERS` members, :data:`MAX_MEMBER_SIZE` bytes a member and
  :data:`MAX_TOTAL_SIZE` in all inflated, :data:`MAX_MANIFEST_SIZE` for the manifest, and a
  member over :data:`RATIO_FLOOR` bytes inflates at most :data:`MAX_RATIO` times its stored
  size. A real bundle is a few MB, its ratios under 10. The members are then read in chunks of
  :data:`CHUNK` bytes, and one that inflates past the size it declared is refused there (a
  forged directory can lie).

Every refusal is a :class:`BundleError` of one line naming the member, its name shown with
control characters escaped (:func:`shown`), so that a name holding a terminal's escape codes
prints as text.
"""

from __future__ import annotations

import re
import stat
import struct
import zipfile
import zlib
from pathlib import Path

MAX_TOTAL_SIZE = 2 * 1024**3  # bytes, all members inflated (and the bundle file itself)
MAX_MEMBER_SIZE = 1024**3  # bytes, one member inflated
MAX_MANIFEST_SIZE = 64 * 1024**2  # bytes, manifest.json inflated
MAX_MEMBERS = 100_000  # entries in the zip's central directory
MAX_DIRECTORY_SIZE = 32 * 1024**2  # bytes of the central directory itself (read whole by zipfile)
MAX_RATIO = 200  # inflated / stored size, for a member over RATIO_FLOOR bytes
RATIO_FLOOR = 1024**2  # smaller members cannot inflate to much, whatever their ratio
CHUNK = 1024**2  # bytes inflated at a time
_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_DEVICES = re.compile(r"(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)", re.IGNORECASE)


class BundleError(ValueError):
    """A bundle that cannot be read, was changed after export, or does not replay."""


def shown(text: str) -> str:
    """``text`` with every control character (and any character that is not printable, such
    as a line separator) escaped as Python writes it in a string literal: ``\\x1b[2J`` prints
    as those six characters, never as a terminal command."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def name_problem(name: str) -> str | None:
    """Why ``name`` (a member's name, a folder's with its trailing ``/``) may not be unpacked
    anywhere, None when it may."""
    path = name[:-1] if name.endswith("/") else name
    if not path:
        return "has an empty name"
    if "\\" in path:
        return "holds a backslash; expected a relative path with / between its parts"
    if path.startswith("/"):
        return "is an absolute path; expected a relative one"
    if ":" in path:
        return "holds a colon (a drive or a stream); expected a relative path"
    for part in path.split("/"):
        if part == "":
            return "has an empty path segment (//); expected a relative path"
        if part in (".", ".."):
            return f"has a {part!r} path segment; expected a path inside the bundle"
        if _DEVICES.fullmatch(part.split(".")[0].rstrip(" ")):
            return f"names the device {part.split('.')[0]!r}; expected a file name"
    return None


def entry_problem(info: zipfile.ZipInfo) -> str | None:
    """Why the zip entry ``info`` may not be read (its name, kind, encryption, compression,
    size or ratio, all from the central directory), None when it may."""
    problem = name_problem(info.filename)
    if problem is not None:
        return problem
    kind = stat.S_IFMT(info.external_attr >> 16) if info.create_system == 3 else 0  # Unix mode bits
    if stat.S_ISLNK(kind):
        return "is a symbolic link; expected a file"
    if kind and not (stat.S_ISREG(kind) or (stat.S_ISDIR(kind) and info.is_dir())):
        return "is a special file (a device, a pipe or a socket); expected a file"
    if info.flag_bits & 0x1:
        return "is encrypted; expected a plain member"
    if info.compress_type not in _METHODS:
        return f"uses compression method {info.compress_type}; expected stored or deflated"
    if info.file_size > MAX_MEMBER_SIZE:
        return f"inflates to {info.file_size:,} bytes; at most {MAX_MEMBER_SIZE:,} a member are read"
    if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        return (
            f"inflates {info.file_size / max(info.compress_size, 1):,.0f} times its stored size; "
            f"at most {MAX_RATIO} are read (a zip bomb?)"
        )
    return None


def _directory(path: Path) -> tuple[int, int] | None:
    """(entries, size in bytes) of the central directory of the zip file at ``path``, as its
    end record declares them (ZIP64's when there is one); None when no end record is found
    (zipfile then names the problem)."""
    with path.open("rb") as handle:
        handle.seek(0, 2)
        end = handle.tell()
        start = max(0, end - (22 + 65535 + 20 + 56))  # the end record, its comment, ZIP64's
        handle.seek(start)
        tail = handle.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        return None
    entries, size = struct.unpack("<xxxxxxxxxxHI", tail[at : at + 16])
    locator = at - 20
    if locator >= 0 and tail[locator : locator + 4] == b"PK\x06\x07":
        (record,) = struct.unpack("<Q", tail[locator + 8 : locator + 16])
        if start <= record and tail[record - start : record - start + 4] == b"PK\x06\x06":
            entries, size = struct.unpack("<QQ", tail[record - start + 32 : record - start + 48])
            return entries, size
    if entries == 0xFFFF or size == 0xFFFFFFFF:  # ZIP64's values, its record not found here
        return None
    return entries, size


def open_checked(path: Path, manifest: str) -> tuple[zipfile.ZipFile, list[zipfile.ZipInfo]]:
    """The zip file at ``path`` open, and its file entries, once its central directory passed
    every check (the module's docstring); ``manifest`` names the member held to
    :data:`MAX_MANIFEST_SIZE`. Raises :class:`BundleError`, or zipfile's and the OS's errors
    for a file that is no zip."""
    size = path.stat().st_size
    if size > MAX_TOTAL_SIZE:
        raise BundleError(f"{path}: {size:,} bytes; a bundle of at most {MAX_TOTAL_SIZE:,} bytes is read")
    directory = _directory(path)
    if directory is not None and (directory[0] > MAX_MEMBERS or directory[1] > MAX_DIRECTORY_SIZE):
        raise BundleError(
            f"{path}: its zip directory declares {directory[0]:,} members in {directory[1]:,} bytes; "
            f"at most {MAX_MEMBERS:,} members in {MAX_DIRECTORY_SIZE:,} bytes are read"
        )
    archive = zipfile.ZipFile(path)
    try:
        entries = _checked_entries(path, archive.infolist(), manifest)
    except BaseException:
        archive.close()
        raise
    return archive, entries


def _checked_entries(path: Path, infos: list[zipfile.ZipInfo], manifest: str) -> list[zipfile.ZipInfo]:
    if len(infos) > MAX_MEMBERS:
        raise BundleError(f"{path}: {len(infos):,} members; at most {MAX_MEMBERS:,} are read")
    seen: set[str] = set()
    total = 0
    for info in infos:
        problem = entry_problem(info)
        if problem is None and info.filename in seen:
            problem = "appears twice; expected each member once"
        if problem is None and info.filename == manifest and info.file_size > MAX_MANIFEST_SIZE:
            problem = f"inflates to {info.file_size:,} bytes; a manifest of at most {MAX_MANIFEST_SIZE:,} is read"
        if problem is not None:
            raise BundleError(f"{path}: member {shown(info.filename)} {problem}; refused")
        seen.add(info.filename)
        total += info.file_size
        if total > MAX_TOTAL_SIZE:
            raise BundleError(
                f"{path}: its members inflate to more than {MAX_TOTAL_SIZE:,} bytes in all "
                f"(at {shown(info.filename)}); refused"
            )
    return [info for info in infos if not info.is_dir()]


def read_member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The bytes of one checked entry, inflated :data:`CHUNK` at a time; refused as soon as
    they pass the size the central directory declared, or when they do not inflate."""
    where = f"{path}: member {shown(info.filename)}"
    parts: list[bytes] = []
    read = 0
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(CHUNK):
                read += len(chunk)
                if read > info.file_size:
                    raise BundleError(f"{where} inflates past the {info.file_size:,} bytes it declares; refused")
                parts.append(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError, NotImplementedError) as exc:
        raise BundleError(f"{where} cannot be read ({shown(str(exc))}); the file is damaged or forged") from None
    if read != info.file_size:
        raise BundleError(f"{where} inflates to {read:,} bytes, not the {info.file_size:,} it declares; refused")
    return b"".join(parts)


def target_under(root: Path, name: str, prefix: str = "") -> Path:
    """Where the member ``prefix + name`` is written as ``name`` under the folder ``root``:
    refused (a :class:`BundleError`) unless ``name`` passes :func:`name_problem` and the path,
    links resolved, stays inside ``root``."""
    problem = name_problem(name)
    if problem is not None:
        raise BundleError(f"member {shown(prefix + name)} {problem}; refused")
    base = root.resolve()
    target = (base / name).resolve()
    if target == base or not target.is_relative_to(base):
        raise BundleError(f"member {shown(prefix + name)} would be written outside {base}; refused")
    return target
