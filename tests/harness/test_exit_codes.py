"""Exit codes a CI job can act on: 2 and one line for every input the user got wrong (CLI options,
environment variables, Kafka tarballs), 3 and a log with the traceback for a bug of ours, never 1.

No Docker and no Spark: every case is refused before either would start (guards make sure).
"""

from __future__ import annotations

import errno
import gzip
import io
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.userdirs import user_cache_dir
from kchaos import cluster_cli, env_cli, fault_cli, report_cli, run_cli, workload_cli
from kchaos.cli import main

REPO = Path(__file__).resolve().parents[2]


def _reached(*args: object, **kwargs: object) -> object:
    raise AssertionError("an invalid command got as far as Docker")


@pytest.fixture
def guarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Commands may not reach a cluster or an image build; caches live in tmp_path."""
    for module, name in (
        (run_cli, "run_scenario"),
        (workload_cli, "run_experiment"),
        (fault_cli, "KafkaCluster"),
        (cluster_cli, "run_smoke"),
        (env_cli, "ensure_kafka_image"),
    ):
        monkeypatch.setattr(module, name, _reached)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("KCHAOS_CACHE", str(tmp_path / "kcache"))
    yield tmp_path


def _one_error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1 and err.startswith("error: "), err
    return code, err


OPTIONS = [
    (["run", "baseline", "--duration", "nan"], "--duration: expected a finite number, got nan"),
    (["run", "baseline", "--duration", "inf"], "--duration: expected a finite number, got inf"),
    (["run", "baseline", "--duration", "1e300"], "--duration: expected a number from 1 to 604800"),
    (["run", "baseline", "--duration", "0"], "--duration: expected a number from 1 to 604800, got 0.0"),
    (["run", "baseline", "--seed", "-1"], "--seed: expected an integer from 0 to"),
    (["run", "baseline", "--seed", str(10**30)], "--seed: expected an integer from 0 to"),
    (["run", "baseline", "--matrix", "--seeds", "1,x"], "--seeds '1,x': expected comma-separated integers"),
    (["run", "baseline", "--seeds", "1,x"], "--seeds '1,x': expected comma-separated integers"),  # a matrix
    (["run", "baseline", "--seed", "1", "--seeds", "2,3"], "--seed and --seeds: give one"),
    (
        ["run", "baseline", "--matrix", "--acks-sets", "all;2"],
        "--matrix needs scenarios, --seeds and --acks-sets",
    ),
    (["run", "baseline", "--matrix", "--budget", "nan"], "--budget: expected a finite number, got nan"),
    (["workload", "--duration", "-inf"], "--duration: expected a finite number, got -inf"),
    (["workload", "--rate", "nan"], "--rate: expected a finite number, got nan"),
    (["workload", "--producers", "0"], "--producers: expected an integer from 1 to 64, got 0"),
    (["workload", "--message-size", "-1"], "--message-size: expected an integer from 0 to"),
    (["fault", "kill", "--run", "x", "--duration", "nan"], "--duration: expected a finite number, got nan"),
    (["fault", "kill", "--run", "x", "--settle", "inf"], "--settle: expected a finite number, got inf"),
    (["fault", "kill", "--run", "x", "--param", "partition=inf"], "param 'partition': expected an integer"),
    (
        ["fault", "kill", "--run", "x", "--param", "partition=-1"],
        "param 'partition': expected an integer from 0",
    ),
    (["fault", "stop", "--run", "x", "--param", "grace_s=nan"], "param 'grace_s': expected a finite number"),
    (["fault", "kill", "--run", "x", "--target", "  "], "fault 'kill': target must be one of"),
    (["cluster", "smoke", "--messages", "0"], "--messages: expected an integer from 1 to"),
]


@pytest.mark.parametrize(("argv", "message"), OPTIONS, ids=[" ".join(a) for a, _ in OPTIONS])
def test_bad_cli_options_exit_2_naming_the_option(
    guarded: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, err = _one_error_line(capsys, argv)
    assert code == 2 and message in err, err


@pytest.mark.parametrize("command", ["run baseline", "run baseline --matrix", "workload"])
def test_out_that_is_a_file_exits_2_naming_it(
    guarded: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    afile = guarded / "runs"
    afile.write_text("not a directory\n")
    code, err = _one_error_line(capsys, [*command.split(), "--out", str(afile)])
    assert code == 2 and f"--out {afile}: exists and is not a directory" in err, err
    code, err = _one_error_line(capsys, [*command.split(), "--out", str(afile / "below")])
    assert code == 2 and f"--out {afile / 'below'}: cannot create the directory" in err, err
    assert afile.read_text() == "not a directory\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check", "{tmp}/absent"], "{tmp}/absent: run directory does not exist"),
        (["check", "{tmp}/afile"], "{tmp}/afile: not a directory"),
        (["report", "{tmp}/afile"], "{tmp}/afile: not a directory"),
        (["report", "--index", "{tmp}/afile"], "{tmp}/afile: not a directory of runs"),
    ],
)
def test_a_run_directory_that_is_none_exits_2(
    guarded: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    (guarded / "afile").write_text("{}")
    code, err = _one_error_line(capsys, [a.replace("{tmp}", str(guarded)) for a in argv])
    assert code == 2 and message.replace("{tmp}", str(guarded)) in err, err


# -- Kafka tarballs ---------------------------------------------------------------------------------
def _tarball(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _broken_tarballs(tmp: Path) -> dict[str, tuple[Path, str]]:
    whole = _tarball(
        tmp / "whole.tgz", {"kafka_2.11-0.9.0.1/libs/kafka_2.11-0.9.0.1.jar": os.urandom(50_000)}
    )
    truncated = tmp / "truncated.tgz"
    truncated.write_bytes(whole.read_bytes()[:-2000])  # gzip reports this as an EOFError
    garbage = tmp / "garbage.tgz"
    garbage.write_bytes(gzip.compress(b"not a tar archive at all\n" * 40))
    return {
        "random bytes": (_write(tmp / "random.tgz", os.urandom(4096)), "not a readable tar archive"),
        "gzip of no tar": (garbage, "not a readable tar archive"),
        "truncated": (truncated, "not a readable tar archive"),
        "no Kafka inside": (
            _tarball(tmp / "empty-kafka.tgz", {"kafka/README": b"hello\n", "kafka/libs/other.jar": b"x"}),
            "no Kafka release inside",
        ),
        "not a tarball": (
            _write(tmp / "kafka.txt", b"hello"),
            "expected a Kafka release number (like 3.9.1), a release tarball",
        ),
        "missing": (tmp / "absent.tgz", "expected a Kafka release number (like 3.9.1), a release tarball"),
    }


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_broken_kafka_tarballs_exit_2_and_leave_nothing_in_the_cache(
    guarded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for what, (tarball, message) in _broken_tarballs(guarded).items():
        code, err = _one_error_line(capsys, ["images", "build", "--kafka", str(tarball)])
        assert code == 2 and f"{tarball}: {message}" in err, (what, err)
    cache = guarded / "kcache"
    assert not [p for p in cache.rglob("*") if p.is_file()], list(cache.rglob("*"))


def test_an_unusable_kchaos_cache_exits_2_naming_it(
    guarded: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    afile = guarded / "afile"
    afile.write_text("x")
    monkeypatch.setenv("KCHAOS_CACHE", str(afile))
    tarball = _tarball(guarded / "k.tgz", {"k/README": b"x"})
    code, err = _one_error_line(capsys, ["images", "build", "--kafka", str(tarball)])
    assert code == 2 and f"KCHAOS_CACHE={afile}: cannot use it as the cache directory" in err, err


# -- environment variables Spark's start reads ------------------------------------------------------
@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("KCHAOS_SPARK_DRIVER_MEMORY", "lots"),
        ("KCHAOS_SPARK_DRIVER_MEMORY", "4g -Xss1k"),
        ("KCHAOS_SPARK_DRIVER_MEMORY", "4096"),  # the JVM would read bytes, Spark MiB
        ("KCHAOS_SPARK_DRIVER_MEMORY", "300m"),  # Spark refuses so small a heap
        ("KCHAOS_SPARK_CLASS_ARCHIVE", "of"),
    ],
)
def test_bad_spark_variables_exit_2_naming_them_before_spark_starts(
    tmp_path: Path, variable: str, value: str
) -> None:
    # Its own process: in this one a SparkSession from another test may already be running.
    run = tmp_path / "run"
    (run / "history").mkdir(parents=True)
    (run / "run.json").write_text('{"format": 1, "topics": [{"name": "t", "acks": "all"}]}')
    for name in ("writes.jsonl", "reads.jsonl"):
        (run / "history" / name).touch()
    env = {**os.environ, variable: value, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    child = subprocess.run(
        [sys.executable, "-m", "kchaos.cli", "check", str(run)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 2, child.stderr
    assert child.stderr.startswith(f"error: {variable}=") and len(child.stderr.splitlines()) == 1, (
        child.stderr
    )


# -- bugs of ours ------------------------------------------------------------------------------------
def _bug(*args: object, **kwargs: object) -> object:
    raise ValueError("cannot convert float NaN to integer")


def test_a_crash_exits_3_with_one_line_and_the_traceback_in_the_run_log(
    guarded: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = guarded / "run"
    run.mkdir()
    (run / "run.json").write_text("{}")
    monkeypatch.setattr(report_cli, "write_report", _bug)
    code, err = _one_error_line(capsys, ["report", str(run)])
    assert code == 3
    assert "a kafka-chaos bug" in err and "ValueError: cannot convert float NaN to integer" in err, err
    assert err.rstrip().endswith(f"traceback in {run / 'harness.log'}"), err
    log = (run / "harness.log").read_text()
    assert "Traceback (most recent call last)" in log and "_bug" in log and "kchaos report" in log


def test_a_crash_outside_a_run_directory_logs_to_the_user_cache(
    guarded: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_cli, "builtin_scenarios", _bug)
    code, err = _one_error_line(capsys, ["scenarios"])
    log = guarded / "xdg" / "kchaos" / "harness.log"
    assert user_cache_dir() == log.parent
    assert code == 3 and err.rstrip().endswith(f"traceback in {log}"), err
    assert "ValueError: cannot convert float NaN to integer" in log.read_text()


def test_a_crash_with_no_writable_log_prints_its_traceback(
    guarded: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (guarded / "xdg").write_text("a file where the cache directory should be")
    monkeypatch.setattr(run_cli, "builtin_scenarios", _bug)
    code = main(["scenarios"])
    err = capsys.readouterr().err
    assert code == 3 and "Traceback" in err and err.splitlines()[-1].endswith("traceback above"), err


def test_an_eoferror_is_a_bug_not_abort_and_exit_1(
    guarded: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def eof(*args: object, **kwargs: object) -> object:
        raise EOFError("Compressed file ended before the end-of-stream marker was reached")

    monkeypatch.setattr(run_cli, "builtin_scenarios", eof)
    code, err = _one_error_line(capsys, ["scenarios"])
    assert code == 3 and "EOFError" in err and "Aborted" not in err, err


def test_a_closed_stdout_is_no_verdict(
    guarded: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def closed(*args: object, **kwargs: object) -> object:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    monkeypatch.setattr(run_cli, "builtin_scenarios", closed)
    code, err = _one_error_line(capsys, ["scenarios"])
    assert code == 2 and "broken pipe" in err, err


def _kchaos_faults(**streams: object) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "kchaos.cli", "faults"]
    return subprocess.run(argv, cwd=REPO, text=True, check=False, **streams)  # type: ignore[call-overload, no-any-return]


def test_a_full_disk_under_stdout_is_no_verdict() -> None:
    with open("/dev/full", "w") as full:
        done = _kchaos_faults(stdout=full, stderr=subprocess.PIPE)
    assert (done.returncode, done.stderr) == (2, "error: cannot write the output: No space left on device\n")


def test_a_pipe_closed_under_stdout_and_stderr_is_no_verdict() -> None:
    # As in `kchaos faults 2>&1 | head -1`: rich alone would exit 1, the code of a broken promise.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = _kchaos_faults(stdout=write_end, stderr=write_end)
    finally:
        os.close(write_end)
    assert done.returncode == 2


def test_a_closed_stdout_is_said_before_any_work() -> None:
    argv = f"{sys.executable} -m kchaos.cli faults >&-"
    done = subprocess.run(["bash", "-c", argv], cwd=REPO, capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (
        2,
        "error: standard output is closed: nothing this command prints could be read\n",
    )


def test_user_cache_dir_follows_xdg_and_ignores_a_relative_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert user_cache_dir() == Path("/somewhere/kchaos")
    for ignored in ("", "relative/cache"):
        monkeypatch.setenv("XDG_CACHE_HOME", ignored)
        assert user_cache_dir() == Path.home() / ".cache" / "kchaos"


def test_a_run_directory_the_check_cannot_write_in_exits_2_before_spark(
    guarded: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = guarded / "run"
    (run / "history").mkdir(parents=True)
    (run / "run.json").write_text('{"format": 1, "topics": [{"name": "t", "acks": "all"}]}')
    for name in ("writes.jsonl", "reads.jsonl"):
        (run / "history" / name).touch()
    # Permissions do not bind root, which may run these tests: say what a read-only directory says.
    monkeypatch.setattr(os, "access", lambda path, mode: not (Path(path) == run and mode & os.W_OK))
    monkeypatch.setattr("checkers.check.get_spark", _reached)
    code, err = _one_error_line(capsys, ["check", str(run)])
    assert code == 2 and f"{run}: this user cannot write in it" in err, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["run", "--duration", "abc", "baseline"],
            "error: Invalid value for '--duration': Input should be a valid number, unable to parse "
            "string as a number (see `kchaos run --help`)",
        ),
        (["runn"], "error: No such command 'runn'. Did you mean 'run'? (see `kchaos --help`)"),
        (
            ["check", "--masterr", "x"],
            "error: No such option: --masterr (Possible options: --master) (see `kchaos check --help`)",
        ),
    ],
)
def test_a_usage_error_is_one_line_too(
    guarded: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert _one_error_line(capsys, argv) == (2, message + "\n")


def test_each_command_is_registered_by_the_module_the_cli_imports_for_it() -> None:
    import typer.main

    from kchaos.cli import COMMAND_MODULES, build_app

    every = typer.main.get_group(build_app(None))
    assert set(every.list_commands(None)) == set(COMMAND_MODULES)  # type: ignore[arg-type]
    for command, module in COMMAND_MODULES.items():
        alone = typer.main.get_group(build_app(command))
        assert command in alone.list_commands(None)  # type: ignore[arg-type]
        siblings = {c for c, m in COMMAND_MODULES.items() if m == module}
        assert set(alone.list_commands(None)) == siblings  # type: ignore[arg-type]


def test_the_command_list_shows_each_summary_as_one_sentence(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # heal's docstring breaks its first sentence over two lines; the list must not keep that break.
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["--help"]) == 0
    listed = capsys.readouterr().out
    assert "e.g. after `kchaos fault` was killed before it healed." in listed
    assert "and print how often each promise it broke broke again." in listed


def test_a_check_does_not_import_docker_or_the_report() -> None:
    probe = (
        "import sys\nfrom kchaos.cli import main\nmain(['check', '--help'])\n"
        "print(sorted(m for m in ('docker', 'testcontainers', 'jinja2') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"
