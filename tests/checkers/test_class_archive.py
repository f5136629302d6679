"""Which class archive a check's JVM is started with (pure logic: no JVM is started here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkers import class_archive


def _fake_java(root: Path, content: bytes) -> Path:
    java = root / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_bytes(content)
    return root


def _built(path: Path, content: bytes = b"archive") -> None:
    """An archive as `build` leaves it: the file and the size recorded after writing it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    path.with_name(f"{path.name}.size").write_text(f"{len(content)}\n")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path / "jdk-a", b"java a")))
    monkeypatch.delenv(class_archive.ARCHIVE_ENV, raising=False)
    monkeypatch.delenv("_KCHAOS_CLASS_ARCHIVE_DUMP", raising=False)
    return tmp_path / "cache" / "kchaos"


def test_archive_is_used_only_once_it_exists(cache: Path) -> None:
    path = class_archive.archive_path()
    assert path is not None and path.parent == cache
    assert class_archive.driver_options() == ""
    _built(path)
    assert class_archive.driver_options() == f"-XX:SharedArchiveFile={path}"


def test_an_archive_cut_short_is_never_used(cache: Path) -> None:
    # A JVM given a truncated archive crashes instead of ignoring it.
    path = class_archive.archive_path()
    assert path is not None
    _built(path, b"the whole archive")
    path.write_bytes(b"the whole")
    assert class_archive.driver_options() == ""
    path.with_name(f"{path.name}.size").unlink()
    path.write_bytes(b"the whole archive")
    assert class_archive.driver_options() == ""


def test_archive_can_be_turned_off(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = class_archive.archive_path()
    assert path is not None
    _built(path)
    monkeypatch.setenv(class_archive.ARCHIVE_ENV, "off")
    assert class_archive.driver_options() == ""


def test_another_java_gets_another_archive(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = class_archive.archive_path()
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path / "jdk-b", b"java b, a newer build")))
    second = class_archive.archive_path()
    assert first is not None and second is not None and first != second


def test_spark_jars_elsewhere_get_another_archive(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A second checkout's .venv holds the same jars at another path; the JVM would reject (silently)
    # an archive dumped with the first one's class path.
    paths = []
    for checkout in ("one", "two"):
        package = tmp_path / checkout / "pyspark"
        (package / "jars").mkdir(parents=True)
        (package / "jars" / "spark-core_2.13-4.3.0.jar").write_bytes(b"same jar")
        monkeypatch.setattr(class_archive.pyspark, "__file__", str(package / "__init__.py"))
        paths.append(class_archive.archive_path())
    assert None not in paths and paths[0] != paths[1]


def test_builder_child_writes_the_archive_instead_of_reading_it(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("_KCHAOS_CLASS_ARCHIVE_DUMP", str(tmp_path / "new.jsa"))
    assert class_archive.driver_options() == f"-XX:ArchiveClassesAtExit={tmp_path / 'new.jsa'}"


def test_no_java_means_no_archive(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    assert class_archive.archive_path() is None
    assert class_archive.driver_options() == ""
