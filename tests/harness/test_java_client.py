"""The Java workload program's build, without Maven: the cache key, the command line, what a second
build does, and Maven's failures as one clear error (a stand-in `mvn` says what Maven 3.8 says)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from contract.errors import ConfigError, EnvironmentError_
from harness import java_client
from harness.java_client import JVM_OPTIONS, MAIN_CLASS, SOURCES, JavaClient, build, build_dir, source_digest


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    """A copy of the program's sources to change."""
    copy = tmp_path / "java"
    shutil.copytree(SOURCES, copy, ignore=shutil.ignore_patterns("target"))
    return copy


def test_the_cache_key_is_the_version_and_the_sources(sources: Path, tmp_path: Path) -> None:
    digest = source_digest(sources)
    assert digest == source_digest(SOURCES) and len(digest) == 16
    (sources / "target").mkdir()
    (sources / "target" / "kchaos-client.jar").write_bytes(b"built")  # Maven's output is no source
    (sources / "README.md").write_text("a word more")  # nor is the README
    assert source_digest(sources) == digest
    main = sources / "src/main/java/kchaos/Main.java"
    main.write_text(main.read_text() + "\n// changed\n")
    changed = source_digest(sources)
    assert changed != digest
    assert build_dir("3.9.2", changed, tmp_path) == tmp_path / "java-client" / f"3.9.2-{changed}"
    assert build_dir("4.1.1", changed, tmp_path) != build_dir("3.9.2", changed, tmp_path)


def test_the_command_starts_the_main_class_on_every_jar(tmp_path: Path) -> None:
    command = JavaClient("3.9.2", tmp_path).command
    assert Path(command[0]).name == "java" and Path(command[0]).is_absolute()
    assert command[1:] == [*JVM_OPTIONS, "-cp", f"{tmp_path}/lib/*", MAIN_CLASS]


def _stand_in_mvn(tmp_path: Path, script: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH gets an `mvn` running `script` (sh; $* are Maven's arguments), each call's arguments
    appended to the file it returns. java stays on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "mvn-calls"
    mvn = bin_dir / "mvn"
    mvn.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n{script}\n')
    mvn.chmod(mvn.stat().st_mode | stat.S_IEXEC)
    java = shutil.which("java")
    assert java is not None, "the tests need a JDK on PATH"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{Path(java).parent}{os.pathsep}/usr/bin:/bin")
    return calls


MISSING = (
    "[ERROR] Failed to execute goal on project kchaos-client: Could not resolve dependencies for project "
    "kchaos:kchaos-client:jar:1: Could not find artifact org.apache.kafka:kafka-clients:jar:3.9.99 in "
    "central (https://repo.maven.apache.org/maven2)"
)
OFFLINE_MISS = (
    "[ERROR] Failed to execute goal on project kchaos-client: Could not resolve dependencies: Cannot "
    "access central (https://repo.maven.apache.org/maven2) in offline mode and the artifact "
    "org.apache.kafka:kafka-clients:jar:3.9.99 has not been downloaded from it before."
)


def test_a_release_maven_central_lacks_is_one_config_error(
    tmp_path: Path, sources: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Offline first (~/.m2 may hold everything), then online when Maven says it must fetch.
    said = f"case \" $* \" in *' -o '*) echo '{OFFLINE_MISS}' ;; *) echo '{MISSING}' ;; esac; exit 1"
    calls = _stand_in_mvn(tmp_path, said, monkeypatch)
    cache = tmp_path / "cache"
    with pytest.raises(
        ConfigError,
        match=r"kafka-clients 3\.9\.99: Maven Central has no org\.apache\.kafka:kafka-clients:3\.9\.99",
    ):
        build("3.9.99", cache, sources)
    runs = calls.read_text().splitlines()
    assert len(runs) == 2 and "-o" in runs[0].split() and "-o" not in runs[1].split()
    assert "-Dkafka.clients.version=3.9.99" in runs[1]
    assert list((cache / "java-client").iterdir()) == []  # nothing half-built left behind


COMPILE_ERROR = (
    "[ERROR] COMPILATION ERROR : \n[ERROR] /x/PipelineRole.java:[91,57] cannot find symbol\n"
    "[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.13.0:compile"
)
NO_NETWORK = (
    "[ERROR] Failed to execute goal: Could not transfer artifact x from/to central: Connection refused"
)


@pytest.mark.parametrize(
    ("said", "error", "match"),
    [
        # a release the program does not compile against (or whose unit tests fail): the release's fault
        (
            COMPILE_ERROR,
            ConfigError,
            r"does not build against kafka-clients 3\.9\.2: /x/PipelineRole\.java:\[91,57\] cannot find",
        ),
        (
            NO_NETWORK,
            EnvironmentError_,
            r"Maven could not build .* for kafka-clients 3\.9\.2: .*Connection refused",
        ),
    ],
)
def test_other_maven_failures_are_one_line(
    said: str,
    error: type[Exception],
    match: str,
    tmp_path: Path,
    sources: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _stand_in_mvn(tmp_path, f"printf '{said}\\n'; exit 1", monkeypatch)
    with pytest.raises(error, match=match):
        build("3.9.2", tmp_path / "cache", sources)


def test_a_second_build_asks_maven_nothing(
    tmp_path: Path, sources: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in build: what Maven's package leaves in target/ (the program's jar and lib/).
    project = "$(dirname $(echo \"$*\" | sed 's/.* -f \\([^ ]*\\).*/\\1/'))"
    target = f"{project}/target"
    script = f"mkdir -p {target}/lib && touch {target}/kchaos-client.jar {target}/lib/x.jar"
    calls = _stand_in_mvn(tmp_path, script, monkeypatch)
    cache = tmp_path / "cache"
    first = build("3.9.2", cache, sources)
    assert first.root == build_dir("3.9.2", source_digest(sources), cache)
    assert sorted(p.name for p in (first.root / "lib").iterdir()) == ["kchaos-client.jar", "x.jar"]
    assert build("3.9.2", cache, sources) == first
    assert len(calls.read_text().splitlines()) == 1  # offline, once: the second build was the cache's
    # Changed sources are another build, and the one of the old sources is removed.
    main = sources / "src/main/java/kchaos/Main.java"
    main.write_text(main.read_text() + "\n// changed\n")
    second = build("3.9.2", cache, sources)
    assert second.root != first.root and not first.root.exists()


def test_a_bad_version_is_refused_before_maven(
    tmp_path: Path, sources: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = _stand_in_mvn(tmp_path, "exit 1", monkeypatch)
    with pytest.raises(ConfigError, match=r"'latest' is not a kafka-clients release number"):
        build("latest", tmp_path / "cache", sources)
    assert java_client.main(["3.9.2; rm -rf /"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a kafka-clients release number" in err and "Traceback" not in err
    assert not calls.exists()
