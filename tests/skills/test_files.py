"""Resource files: path rules (40001 INVALID_PATH), decoding, sizes (41301), media types, hashes."""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile

import pytest

from memhub.knowledge.skill.config import SkillConfig
from memhub.knowledge.skill.errors import InvalidPath, ResourceTooLarge, SkillBadRequest
from memhub.knowledge.skill.files import (
    ResourcePayload,
    check_path,
    check_total,
    decode,
    decode_files,
    guess_mime,
)
from memhub.knowledge.skill.views import build_zip
from memhub.model.skills import SkillFile, SkillVersion


@pytest.mark.parametrize("path", ["run.sh", "scripts/a.py", "a/b/c.d.txt", ".hidden", "a..b", "x" * 512])
def test_relative_paths_pass(path: str) -> None:
    assert check_path(path, "files[0].path") == path


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("", "must not be empty"),
        ("/etc/passwd", "must be relative"),
        ("C:/x", "must be relative"),
        ("../x", "'..' segment"),
        ("a/../../x", "'..' segment"),
        ("a\\b", "backslash"),
        ("a\x00b", "control characters"),
        ("a\nb", "control characters"),
        ("a\x7fb", "control characters"),
        ("a//b", "empty or '.' segments"),
        ("a/./b", "empty or '.' segments"),
        ("a/", "empty or '.' segments"),
        ("x" * 513, "at most 512 characters"),
    ],
)
def test_unsafe_paths_are_refused(path: str, rule: str) -> None:
    with pytest.raises(InvalidPath) as info:
        check_path(path, "files[2].path")
    assert info.value.code == 40001
    assert info.value.message.startswith("INVALID_PATH: files[2].path: ")
    assert rule in info.value.message


def test_decode_utf8_and_base64() -> None:
    assert decode("héllo", "utf-8", "c") == "héllo".encode()
    raw = bytes(range(256))
    assert decode(base64.b64encode(raw).decode(), "base64", "c") == raw
    wrapped = base64.encodebytes(raw).decode()  # MIME line breaks are not content
    assert decode(wrapped, "base64", "c") == raw


@pytest.mark.parametrize("bad", ["abc", "ab$=", "====", "a===b"])
def test_bad_base64_is_40001(bad: str) -> None:
    with pytest.raises(SkillBadRequest) as info:
        decode(bad, "base64", "files[0].content")
    assert info.value.code == 40001
    assert info.value.message == "files[0].content: must be valid base64"


def test_lone_surrogate_is_refused() -> None:
    with pytest.raises(SkillBadRequest):
        decode("\ud800", "utf-8", "files[0].content")


def test_mime_guess_follows_the_original_table() -> None:
    assert guess_mime("run.SH") == "text/x-shellscript"
    assert guess_mime("a/b.json") == "application/json"
    assert guess_mime("Makefile") == "application/octet-stream"
    assert guess_mime("dir.d/file") == "application/octet-stream"


def test_decode_files_builds_manifest_entries() -> None:
    files = decode_files(
        [
            ResourcePayload("run.sh", "echo hi\n", "utf-8", is_executable=True),
            ResourcePayload("data.bin", base64.b64encode(b"\x00\x01").decode(), "base64", mime_type="x/y"),
        ],
        "resources",
        SkillConfig(),
    )
    first, second = files
    assert first.entry == SkillFile("run.sh", hashlib.sha256(b"echo hi\n").hexdigest(), 8, "text/x-shellscript", True)
    assert (second.entry.mime_type, second.entry.size_bytes, second.data) == ("x/y", 2, b"\x00\x01")


def test_a_path_twice_in_one_call_is_refused() -> None:
    with pytest.raises(SkillBadRequest) as info:
        decode_files(
            [ResourcePayload("a.txt", "1", "utf-8"), ResourcePayload("a.txt", "2", "utf-8")], "files", SkillConfig()
        )
    assert info.value.message == "files[1].path: is the same path as files[0].path"


def test_size_limits_are_41301() -> None:
    config = SkillConfig(max_resource_bytes=4, max_skill_total_bytes=6)
    assert decode_files([ResourcePayload("a", "1234", "utf-8")], "files", config)
    with pytest.raises(ResourceTooLarge) as info:
        decode_files([ResourcePayload("a", "12345", "utf-8")], "files", config)
    assert info.value.code == 41301
    assert info.value.message == "RESOURCE_TOO_LARGE: files[0] (a) is 5 bytes, over the limit of 4 bytes"
    entry = SkillFile("a", "0" * 64, 4, "text/plain", False)
    check_total([entry], config)
    with pytest.raises(ResourceTooLarge):
        check_total([entry, entry], config)


def test_too_many_files_in_one_call() -> None:
    with pytest.raises(SkillBadRequest):
        payloads = [ResourcePayload(f"f{i}", "", "utf-8") for i in range(3)]
        decode_files(payloads, "files", SkillConfig(max_resources_per_call=2))


def test_an_export_leaves_out_a_file_stored_before_the_rules_that_would_overwrite_another() -> None:
    def entry(path: str) -> SkillFile:
        return SkillFile(path, hashlib.sha256(path.encode()).hexdigest(), len(path), "text/plain", False)

    legacy = SkillVersion(
        service_id="svc",
        skill_id="skl-000000000001",
        version=1,
        is_head=True,
        status="active",
        team_id="t",
        owner_agent_id="a",
        user_id="u",
        task_id="",
        name="deploy",
        description="d",
        content="---\nname: deploy\ndescription: d\n---\nreviewed\n",
        content_hash="",
        files=(entry("Run.sh"), entry("SKILL.md"), entry("run.sh"), entry("skill.md")),
        metadata={},
        created_ms=0,
        updated_ms=0,
    )
    zipped, count, warnings = build_zip(legacy, lambda f: f.path.encode())
    with zipfile.ZipFile(io.BytesIO(zipped)) as archive:
        assert archive.namelist() == ["deploy/SKILL.md", "deploy/Run.sh"]
        assert archive.read("deploy/SKILL.md").decode().endswith("reviewed\n")  # the skill's own document
    assert count == 1
    assert warnings == [
        f"{p}: would overwrite another entry when unpacked, skipped" for p in ("SKILL.md", "run.sh", "skill.md")
    ]
