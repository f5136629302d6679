"""`kchaos doctor` on this machine, for real: its kernel probe runs in a scratch container it removes."""

from __future__ import annotations

import pytest

from contract.errors import EnvironmentError_
from harness import docker_env
from harness.images import KafkaImage
from kchaos.cli import main

pytestmark = pytest.mark.docker


def _probe_containers() -> list[str]:
    everything = docker_env.client().containers.list(all=True, filters={"label": docker_env.RUN_LABEL})
    return [c.name for c in everything if c.name.startswith("kchaos-kernel-probe-")]


def test_doctor_reports_what_the_kernel_offers_link_faults(
    kafka_image: KafkaImage, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["doctor"])
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "kernel (link faults)" in line]
    assert len(lines) == 1, out
    # Every kernel this project targets has tbf and the statistic match; netem is optional, and
    # when it is missing the line says what `slow` then does.
    offered = lines[0].split(": offers ", 1)[1].split(";")[0]
    assert lines[0].startswith("ok") and {"tbf", "statistic"} <= set(offered.split(", ")), out
    assert "netem" in offered or "no delay or jitter" in lines[0], out
    assert code == (2 if "MISSING" in out else 0), out
    assert not _probe_containers()


def test_scratch_container_of_a_missing_image_is_a_clear_error_and_is_never_pulled() -> None:
    missing = docker_env.ScratchContainer("kchaos/nope:missing", "kernel-probe")
    with pytest.raises(EnvironmentError_, match=r"no local image kchaos/nope:missing"), missing:
        pass
    assert not _probe_containers()
