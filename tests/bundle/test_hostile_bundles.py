"""A stranger's run bundle is safe to show and replay: forged member names never leave the
replay folder, a zip bomb is refused from the zip's directory before it inflates, YAML alias
bombs (in a bundle's config.yaml, in a --config-dir file) are refused instead of hanging, a
manifest of the wrong shape is one line naming what was expected, and control characters in
names print escaped.

Each hostile bundle is the README's bundle (docs/bundles/default-run.zip) rewritten, its
manifest's sha256 digests made to match the forged members, so that the tamper check passes
and only the checks under test can refuse it.
"""

from __future__ import annotations

import hashlib
import json
import stat
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcu_exp.bundle import safety
from mcu_exp.cli.bundle import main as bundle_main

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "docs" / "bundles" / "default-run.zip"
BOMB_LINES = ['a: &a ["x","x","x","x","x","x","x","x","x"]'] + [
    f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]" for p, c in zip("abcdefgh", "bcdefghi")
]  # the billion laughs: 9**9 strings from nine short lines
BOMB = "\n".join(BOMB_LINES) + "\n"


def original() -> tuple[dict[str, Any], dict[str, bytes]]:
    """The README bundle's manifest and its other members."""
    with zipfile.ZipFile(SOURCE) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    return json.loads(members.pop("manifest.json")), members


def forge(
    out: Path,
    members: dict[str, bytes],
    manifest: Any,
    raw_manifest: bytes | None = None,
    kinds: dict[str, int] | None = None,
) -> Path:
    """Write a bundle of ``members`` whose manifest lists them with matching digests
    (``raw_manifest``: these bytes instead); ``kinds`` gives a member Unix file type bits."""
    if isinstance(manifest, dict):
        manifest = {**manifest, "members": {n: hashlib.sha256(b).hexdigest() for n, b in sorted(members.items())}}
    text = raw_manifest if raw_manifest is not None else json.dumps(manifest).encode()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", text)
        for name, blob in members.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if kinds and name in kinds:
                info.create_system = 3
                info.external_attr = (kinds[name] | 0o777) << 16
            archive.writestr(info, blob)
    return out


def refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run ``mcu-exp bundle`` in this process; the one line it printed on stderr (exit 1)."""
    with pytest.raises(SystemExit) as stop:
        bundle_main(list(argv))
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    "name",
    [
        "data/0/../../../sentinel",  # climbs from <work>/data/0 to tmp_path
        "data/0/{tmp}/sentinel",  # an empty segment: data/0//tmp/…, an absolute path once data/0/ is cut
        "data/0/questions/..\\..\\..\\..\\sentinel",
        "data/0/C:/sentinel",
        "data/0/NUL",
        "data/0/questions/con.txt",
        "data/0/./sentinel",
    ],
)
def test_member_names_leaving_the_replay_folder_are_refused_before_any_write(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = name.format(tmp=tmp_path)
    manifest, members = original()
    manifest["jobs"][0]["with_data"] = True
    members[name] = b"written outside the replay folder\n"
    bundle = forge(tmp_path / "forged.zip", members, manifest)
    work = tmp_path / "work"
    err = refusal(capsys, "replay", str(bundle), "--keep", str(work))
    assert f"member {name} " in err and "refused" in err, err
    assert not (tmp_path / "sentinel").exists()
    assert not list(work.rglob("*sentinel*")) and not (work / "data").exists()
    assert "refused" in refusal(capsys, "show", str(bundle))  # show names it too, not exit 0


@pytest.mark.parametrize(("kind", "words"), [(stat.S_IFLNK, "symbolic link"), (stat.S_IFIFO, "special file")])
def test_a_link_or_special_file_member_is_refused(
    kind: int, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest, members = original()
    members["data/0/evaluations.csv"] = b"/etc/passwd"
    bundle = forge(tmp_path / "link.zip", members, manifest, kinds={"data/0/evaluations.csv": kind})
    err = refusal(capsys, "show", str(bundle))
    assert "member data/0/evaluations.csv is a " + words in err, err


def _deflated(blob: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    return packer.compress(blob) + packer.flush()


def _zeros(gib: int) -> bytes:
    """A raw deflate stream of ``gib`` GiB of zeros, ~1 KB a MiB, built in milliseconds: after a
    full flush deflate starts afresh, so every MiB compresses to the same bytes."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = packer.compress(bytes(1 << 20)) + packer.flush(zlib.Z_FULL_FLUSH)
    return block * (gib << 10) + packer.flush()


def write_raw_zip(out: Path, entries: list[tuple[str, bytes, int, int]]) -> None:
    """A zip file of deflated ``(name, raw deflate data, crc32, inflated size)`` entries, written
    field by field (zipfile cannot store data it did not compress itself)."""
    local, directory = bytearray(), bytearray()
    for name, data, crc, size in entries:
        encoded = name.encode()
        head = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(data), size, len(encoded), 0)
        fields = (0x02014B50, 20, 20, 0, 8, 0, 0x21, crc, len(data), size, len(encoded), 0, 0, 0, 0, 0, len(local))
        directory += struct.pack("<IHHHHHHIIIHHHHHII", *fields) + encoded
        local += head + encoded + data
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(directory), len(local), 0)
    out.write_bytes(bytes(local + directory + end))


def test_a_zip_bomb_is_refused_from_the_directory_before_it_inflates(tmp_path: Path) -> None:
    """A 3 MB member that inflates to 3 GiB (not even listed in the manifest): refused in one
    line, the process never above 200 MB (measured in a fresh child, which would need 3 GiB and
    is stopped at 2 GiB of address space should it try). The child's peak is its VmHWM: Linux
    carries the parent's peak into a child's ``ru_maxrss`` across fork and exec, and this
    pytest process may hold far more than 200 MB."""
    manifest, members = original()
    manifest = {**manifest, "members": {n: hashlib.sha256(b).hexdigest() for n, b in sorted(members.items())}}
    blobs = {"manifest.json": json.dumps(manifest).encode(), **members}
    entries = [(n, _deflated(b), zlib.crc32(b), len(b)) for n, b in blobs.items()]
    entries.append(("cache/zeros.bin", _zeros(3), 0, 3 << 30))  # never read that far: no CRC needed
    bundle = tmp_path / "bomb.zip"
    write_raw_zip(bundle, entries)
    assert bundle.stat().st_size < 8 << 20
    child = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "from mcu_exp.cli.bundle import main\n"
        "try:\n"
        "    main(['show', sys.argv[1]])\n"
        "finally:\n"
        "    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "    try:\n"
        "        status = open('/proc/self/status').read().split('VmHWM:')[1]\n"
        "        peak = int(status.split()[0])\n"
        "    except (OSError, IndexError):\n"
        "        pass\n"
        "    print(f'peak {peak}', file=sys.stderr)\n"
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", child, str(bundle)], capture_output=True, text=True, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert len(lines) == 2 and "member cache/zeros.bin inflates to 3,221,225,472 bytes" in lines[0], lines
    assert int(lines[1].split()[1]) < 200 * 1024, lines[1]  # KiB on Linux
    assert time.monotonic() - started < 30


@pytest.mark.parametrize(
    ("limit", "value", "words"),
    [
        ("MAX_TOTAL_SIZE", 1_000_000, "inflate to more than 1,000,000 bytes in all"),
        ("MAX_MEMBER_SIZE", 100_000, "at most 100,000 a member"),
        ("MAX_MEMBERS", 10, "at most 10 members"),
        ("MAX_MANIFEST_SIZE", 10_000, "a manifest of at most 10,000"),
    ],
)
def test_each_limit_refuses_the_bundle_that_passes_it(
    limit: str, value: int, words: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(safety, limit, value)
    assert words in refusal(capsys, "show", str(SOURCE))


def test_a_member_inflating_past_the_ratio_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(safety, "RATIO_FLOOR", 10_000)
    manifest, members = original()
    members["data/0/blank.txt"] = b" " * 2_000_000
    bundle = forge(tmp_path / "ratio.zip", members, manifest)
    assert "member data/0/blank.txt inflates" in refusal(capsys, "show", str(bundle))


def test_the_readme_bundle_passes_every_check(capsys: pytest.CaptureFixture[str]) -> None:
    bundle_main(["show", str(SOURCE)])
    out = capsys.readouterr().out
    assert "1,000 samples" in out and "F1 69.4% [60.9%, 73.5%]" in out


def _with_config(tmp_path: Path, text: str) -> Path:
    manifest, members = original()
    members["jobs/0/config.yaml"] = text.encode()
    return forge(tmp_path / "config.zip", members, manifest)


def test_an_alias_bomb_in_a_bundles_config_is_refused_at_once(tmp_path: Path) -> None:
    """In a child with a timeout: on a version without the check the bomb hangs the replay."""
    manifest, members = original()
    bundle = _with_config(tmp_path, members["jobs/0/config.yaml"].decode() + BOMB)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "mcu_exp", "bundle", "replay", str(bundle)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert "jobs/0/config.yaml: YAML aliases expand to more than" in line, line
    assert time.monotonic() - started < 30


def _config_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "confs"
    (folder / "model").mkdir(parents=True)
    shipped = (REPO / "conf" / "model" / "gpt-4o.yaml").read_text()
    (folder / "model" / "bomb.yaml").write_text(shipped + "settings:\n" + "".join(f"  {x}\n" for x in BOMB_LINES))
    return folder


@pytest.mark.parametrize("how", ["--config-dir", "hydra.searchpath"])
def test_an_alias_bomb_in_a_config_dir_file_stops_the_job_at_once(how: str, tmp_path: Path) -> None:
    folder = _config_dir(tmp_path)
    where = ["--config-dir", str(folder)] if how == "--config-dir" else [f"hydra.searchpath=[file://{folder}]"]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "mcu_exp", *where, "model=bomb", "debug=quick", f"paths.outputs={tmp_path / 'out'}"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert f"{folder / 'model' / 'bomb.yaml'}: YAML aliases expand" in line, line
    assert time.monotonic() - started < 30


MANIFESTS: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    "a list": (lambda m: [m], "manifest.json is an array; expected an object"),
    "jobs a number": (lambda m: {**m, "jobs": 3}, "manifest.json: jobs is a number; expected an array"),
    "no jobs": (lambda m: {k: v for k, v in m.items() if k != "jobs"}, "manifest.json has no jobs"),
    "a job a string": (lambda m: {**m, "jobs": ["x"]}, "jobs[0] is a string; expected a job object"),
    "counts a list": (lambda m: {**m, "counts": [1]}, "counts is an array; expected an object"),
    "a count a string": (lambda m: {**m, "counts": {"samples": "many"}}, 'counts["samples"] is a string'),
    "environment a string": (lambda m: {**m, "environment": "x"}, "environment is a string; expected an object"),
    "packages a list": (
        lambda m: {**m, "environment": {**m["environment"], "packages": []}},
        "environment.packages is an array",
    ),
    "sample_digests a list": (lambda m: {**m, "sample_digests": []}, "sample_digests is an array"),
    "pins a list": (lambda m: {**m, "pins": []}, "pins is an array; expected an object"),
    "a headline a string": (
        lambda m: {**m, "jobs": [{**m["jobs"][0], "headline": {"f1": "high"}}]},
        'jobs[0].headline["f1"] is a string; expected a number or null',
    ),
    "a dataset a list": (
        lambda m: {**m, "jobs": [{**m["jobs"][0], "dataset": []}]},
        "jobs[0].dataset is an array; expected an object",
    ),
}


@pytest.mark.parametrize("case", sorted(MANIFESTS))
def test_a_manifest_of_the_wrong_shape_is_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit, words = MANIFESTS[case]
    manifest, members = original()
    forged = edit(manifest)
    if isinstance(forged, list):
        forged = [{**forged[0], "members": {n: hashlib.sha256(b).hexdigest() for n, b in members.items()}}]
    bundle = forge(tmp_path / "shape.zip", members, forged)
    for action in ("show", "replay"):
        err = refusal(capsys, action, str(bundle))
        assert words in err, err


def test_a_manifest_nested_200000_deep_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, members = original()
    bundle = forge(tmp_path / "deep.zip", members, None, raw_manifest=b"[" * 200_000 + b"]" * 200_000)
    assert "manifest.json: JSON nested deeper than 64 levels" in refusal(capsys, "show", str(bundle))


@pytest.mark.parametrize(
    ("member", "line", "words"),
    [
        ("cache/samples.jsonl", '{"key": "a"}', "cache/samples.jsonl line 1 is an object; expected an array"),
        ("cache/samples.jsonl", '["a", 3]', "cache/samples.jsonl line 1 its text is a number"),
        ("cache/pair_scores.jsonl", '[{"a": 1}, 0.5]', "cache/pair_scores.jsonl line 1 its key is an object"),
        ("cache/pair_scores.jsonl", '["zz", 0.5]', "cache/pair_scores.jsonl line 1 its key is not hexadecimal"),
        ("cache/pair_scores.jsonl", '["00", 0.5, 1, 2]', "cache/pair_scores.jsonl line 1 has 4 value(s); expected 2"),
        ("cache/text_lengths.jsonl", '["00", null, 1]', "cache/text_lengths.jsonl line 1 its value 1 is null"),
    ],
)
def test_a_cache_row_of_the_wrong_shape_is_one_line(
    member: str, line: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest, members = original()
    members[member] = (line + "\n").encode() + members[member]
    bundle = forge(tmp_path / "row.zip", members, manifest)
    assert words in refusal(capsys, "replay", str(bundle), "--keep", str(tmp_path / "work"))


def test_escape_codes_in_names_print_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest, members = original()
    manifest["jobs"][0]["name"] = "\x1b[2Jjob\x07"
    bundle = forge(tmp_path / "named.zip", members, manifest)
    bundle_main(["show", str(bundle)])
    out = capsys.readouterr().out
    assert "job \\x1b[2Jjob\\x07 (run " in out and "\x1b" not in out and "\x07" not in out
    forged = json.loads(zipfile.ZipFile(bundle).read("manifest.json"))
    forged["members"]["jobs/0/results/\x1b[2J.csv"] = "0" * 64  # listed, not in the zip
    missing = forge(tmp_path / "missing.zip", members, None, raw_manifest=json.dumps(forged).encode())
    err = refusal(capsys, "show", str(missing))
    assert "member jobs/0/results/\\x1b[2J.csv is missing" in err and "\x1b" not in err, err


def test_a_name_passes_only_as_a_relative_path_of_plain_segments(tmp_path: Path) -> None:
    for good in ("jobs/0/config.yaml", "data/0/questions/q.jsonl", "data/0/nul_results.csv", "data/0/ε.csv"):
        assert safety.name_problem(good) is None, good
    for bad in ("", "/etc/passwd", "a//b", "a/../b", "..", "a\\b", "C:x", "a/CON", "a/com1.txt", "a/lpt9"):
        assert safety.name_problem(bad) is not None, bad
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "link").symlink_to(tmp_path)
    with pytest.raises(safety.BundleError, match="outside"):
        safety.target_under(tmp_path / "out", "link/sentinel")
