"""Resolving a Kafka release by version from Maven Central: the pure parts (coordinates, the POM,
the extra jars per release line, Maven's failures in one line) and the cache, without Maven."""

from __future__ import annotations

import os
import stat
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from contract.errors import ConfigError, EnvironmentError_
from harness import maven_release
from harness.images import KafkaDistribution
from harness.maven_release import MavenRelease, is_version, resolve, source_of

POM_NS = "{http://maven.apache.org/POM/4.0.0}"


def test_version_numbers_and_paths() -> None:
    assert all(is_version(v) for v in ("3.9.1", "0.9.0.1", "0.11.0.3", "4.1.1", "3.9"))
    assert not any(
        is_version(v) for v in ("", "3", "v3.9.1", "3.9.1-rc1", "kafka.tgz", "./3.9.1", "1.2.3.4.5")
    )


@pytest.mark.parametrize(
    ("version", "artifact"),
    [
        ("0.9.0.1", "kafka_2.11"),
        ("0.11.0.3", "kafka_2.11"),
        ("1.0.2", "kafka_2.12"),
        ("2.3.1", "kafka_2.12"),
        ("2.4.1", "kafka_2.13"),
        ("3.9.1", "kafka_2.13"),
        ("4.1.1", "kafka_2.13"),
    ],
)
def test_scala_build_per_release_line(version: str, artifact: str) -> None:
    assert MavenRelease(version).coordinates == f"org.apache.kafka:{artifact}:{version}"


def _artifacts(version: str) -> list[str]:
    return [f"{g}:{a}" for g, a, _ in MavenRelease(version).dependencies()]


def test_extra_jars_per_release_line() -> None:
    # 0.9-1.0 bring their own log4j binding; before 2.1 the ZooKeeper client needs the JAXB API on Java 11+.
    assert _artifacts("0.9.0.1") == ["org.apache.kafka:kafka_2.11", "javax.xml.bind:jaxb-api"]
    assert _artifacts("1.1.1") == [
        "org.apache.kafka:kafka_2.12",
        "javax.xml.bind:jaxb-api",
        "ch.qos.reload4j:reload4j",
        "org.slf4j:slf4j-reload4j",
    ]
    assert _artifacts("2.8.2") == [
        "org.apache.kafka:kafka_2.13",
        "ch.qos.reload4j:reload4j",
        "org.slf4j:slf4j-reload4j",
    ]
    assert _artifacts("3.9.1") == [
        "org.apache.kafka:kafka_2.13",
        "org.apache.kafka:kafka-tools",
        "ch.qos.reload4j:reload4j",
        "org.slf4j:slf4j-reload4j",
    ]
    assert _artifacts("4.1.1") == [
        "org.apache.kafka:kafka_2.13",
        "org.apache.kafka:kafka-tools",
        "org.apache.logging.log4j:log4j-slf4j-impl",
    ]
    assert ("org.apache.kafka", "kafka-tools", "3.9.1") in MavenRelease("3.9.1").dependencies()


def test_pom_lists_every_dependency() -> None:
    release = MavenRelease("3.9.1")
    root = ET.fromstring(release.pom())
    assert root.findtext(f"{POM_NS}packaging") == "pom"
    listed = [
        tuple(dep.findtext(f"{POM_NS}{field}") for field in ("groupId", "artifactId", "version"))
        for dep in root.iter(f"{POM_NS}dependency")
    ]
    assert listed == release.dependencies()


def _fake_mvn(tmp_path: Path, script: str) -> str:
    """A PATH whose `mvn` runs `script` (sh) instead of Maven."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text(f"#!/bin/sh\n{script}\n")
    mvn.chmod(mvn.stat().st_mode | stat.S_IEXEC)
    return f"{bin_dir}{os.pathsep}/usr/bin:/bin"


def _saying(text: str) -> str:
    return f"echo '{text}'; exit 1"


def test_a_missing_release_is_one_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What Maven 3.8 prints when Central has no such broker jar (after a first miss, a cached one).
    said = (
        "[ERROR] Failed to execute goal on project kafka-release: Could not resolve dependencies: "
        "The following artifacts could not be resolved: org.apache.kafka:kafka_2.13:jar:3.9.99: "
        "org.apache.kafka:kafka_2.13:jar:3.9.99 was not found in central during a previous attempt."
    )
    monkeypatch.setenv("PATH", _fake_mvn(tmp_path, _saying(said)))
    with pytest.raises(
        ConfigError, match=r"Kafka 3\.9\.99: Maven Central has no org\.apache\.kafka:kafka_2\.13:3\.9\.99"
    ):
        resolve("3.9.99", tmp_path / "cache")
    assert not list((tmp_path / "cache" / "dist").iterdir())  # nothing half-resolved left behind


def test_other_maven_failures_are_environment_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said = "[ERROR] Failed to execute goal: Could not transfer artifact x from/to central: Connection refused"
    monkeypatch.setenv("PATH", _fake_mvn(tmp_path, _saying(said)))
    with pytest.raises(
        EnvironmentError_, match=r"Maven could not resolve Kafka 3\.9\.1 .*Connection refused"
    ):
        resolve("3.9.1", tmp_path / "cache")


def test_no_maven_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EnvironmentError_, match=r"Maven \(mvn\) is needed .* run `make setup`"):
        resolve("3.9.1", tmp_path / "cache")
    with pytest.raises(ConfigError, match="not a Kafka release number"):
        resolve("../3.9.1", tmp_path / "cache")


def test_a_resolved_release_is_kept_and_not_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fake Maven writes what copy-dependencies would and counts its calls.
    calls = tmp_path / "calls"
    script = (
        f'echo call >> {calls}\nfor a in "$@"; do case "$a" in -DoutputDirectory=*) '
        'd="${a#-DoutputDirectory=}"; mkdir -p "$d"; '
        'touch "$d/kafka_2.13-3.9.1.jar" "$d/zookeeper-3.8.4.jar";; '
        "esac; done"
    )
    monkeypatch.setenv("PATH", _fake_mvn(tmp_path, script))
    first = resolve("3.9.1", tmp_path / "cache")
    assert resolve("3.9.1", tmp_path / "cache") == first
    assert calls.read_text().count("call") == 1
    assert source_of(first) == "maven:org.apache.kafka:kafka_2.13:3.9.1"
    dist = KafkaDistribution.from_directory(first)
    assert (dist.version, dist.source) == ("3.9.1", "maven:org.apache.kafka:kafka_2.13:3.9.1")
    assert sorted(p.name for p in (first / "libs").iterdir()) == [
        "kafka_2.13-3.9.1.jar",
        "zookeeper-3.8.4.jar",
    ]


def test_locate_takes_a_path_before_a_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "3.9.1"
    (root / "libs").mkdir(parents=True)
    (root / "libs" / "kafka_2.13-3.6.1.jar").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(maven_release, "resolve", lambda *_: pytest.fail("asked Maven for a directory"))
    dist = KafkaDistribution.locate("3.9.1")  # the directory ./3.9.1 exists: it is what was meant
    assert (dist.version, dist.source) == ("3.6.1", "directory:3.9.1")
