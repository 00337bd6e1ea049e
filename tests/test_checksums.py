"""mtrl/checksums.py: manifests in sha256sum format, a guard file for the manifest,
and one-line refusals naming the damaged file."""

import hashlib
import subprocess

import pytest

from mtrl.checksums import (MANIFEST, MANIFEST_DIGEST, ChecksumMismatch, verify_manifest,
                            write_manifest)


@pytest.fixture
def saved(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.bin").write_bytes(b"\x00\x01" * 100)
    (tmp_path / "sub" / "b.txt").write_text("hello")
    write_manifest(tmp_path)
    return tmp_path


def test_the_manifest_lists_every_file_with_its_digest_and_is_guarded(saved):
    lines = (saved / MANIFEST).read_text().splitlines()
    a_digest = hashlib.sha256(b"\x00\x01" * 100).hexdigest()
    assert lines == [f"{a_digest}  a.bin", f"{hashlib.sha256(b'hello').hexdigest()}  sub/b.txt"]
    manifest_digest = hashlib.sha256((saved / MANIFEST).read_bytes()).hexdigest()
    assert (saved / MANIFEST_DIGEST).read_text() == f"{manifest_digest}  {MANIFEST}\n"
    assert verify_manifest(saved) is True
    assert not list(saved.glob("*.tmp"))


def test_sha256sum_checks_both_files_by_hand(saved):
    # coreutils' sha256sum, on every Debian machine CI uses.
    for name in (MANIFEST, MANIFEST_DIGEST):
        subprocess.run(["sha256sum", "--check", "--quiet", name], cwd=saved, check=True)


def test_no_manifest_means_unverified_not_corrupt(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"x")
    assert verify_manifest(tmp_path) is False


def test_a_changed_file_is_named(saved):
    (saved / "sub" / "b.txt").write_text("hellp")
    with pytest.raises(ChecksumMismatch) as refused:
        verify_manifest(saved)
    assert refused.value.path == saved / "sub" / "b.txt"
    assert "(the file is corrupt)" in str(refused.value)


def test_a_missing_file_is_named(saved):
    (saved / "a.bin").unlink()
    with pytest.raises(ChecksumMismatch, match="a.bin is missing") as refused:
        verify_manifest(saved)
    assert refused.value.path == saved / "a.bin"


def test_a_changed_manifest_is_named_not_the_file_its_damaged_line_lists(saved):
    text = (saved / MANIFEST).read_text()
    (saved / MANIFEST).write_text(text.replace("a.bin", "a.bim"))  # a phantom file
    with pytest.raises(ChecksumMismatch, match=r"\(the manifest is corrupt\)") as refused:
        verify_manifest(saved)
    assert refused.value.path == saved / MANIFEST


def test_a_manifest_without_its_guard_is_still_checked_file_by_file(saved):
    # Saved before the guard existed, or stopped between the two renames.
    (saved / MANIFEST_DIGEST).unlink()
    assert verify_manifest(saved) is True
    (saved / "a.bin").write_bytes(b"changed")
    with pytest.raises(ChecksumMismatch, match="a.bin does not match"):
        verify_manifest(saved)


def test_writing_again_replaces_manifest_and_guard_together(saved):
    (saved / "c.bin").write_bytes(b"new")
    write_manifest(saved)
    assert "c.bin" in (saved / MANIFEST).read_text()
    assert verify_manifest(saved) is True  # the old guard did not judge the new manifest


def test_chosen_files_only(tmp_path):
    (tmp_path / "w.safetensors").write_bytes(b"w")
    (tmp_path / "notes.txt").write_text("free to edit")
    write_manifest(tmp_path, [tmp_path / "w.safetensors"])
    (tmp_path / "notes.txt").write_text("edited")
    assert verify_manifest(tmp_path) is True
