"""What the error for a node that exited while starting says, from the node's log (pure logic)."""

from __future__ import annotations

from contract.errors import ClusterError, ConfigError
from harness.cluster import STARTUP_LOG_LINES, startup_failure

EMPTIED_BOOTSTRAP = """\
[2026-12-05 13:35:08,780] ERROR Exiting Kafka due to fatal exception (kafka.Kafka$)
java.lang.RuntimeException: No FeatureLevelRecord for metadata.version was found in the bootstrap \
metadata from the binary bootstrap metadata file: /var/lib/kafka/data/bootstrap.checkpoint
        at org.apache.kafka.metadata.bootstrap.BootstrapMetadata.fromRecords(BootstrapMetadata.java:89)
"""


def test_a_rejected_config_value_is_a_config_error_naming_key_value_and_kafkas_reason() -> None:
    reason = "Not a number of type INT"
    logs = f"INFO starting\nERROR Invalid value abc for configuration num.network.threads: {reason}\n"
    error = startup_failure("kafka-1", logs)
    assert isinstance(error, ConfigError)
    assert str(error) == f"broker config 'num.network.threads': Kafka rejected value 'abc': {reason}"


def test_an_emptied_bootstrap_checkpoint_is_named_with_the_finding_and_the_way_around_it() -> None:
    error = startup_failure("kafka-3", "INFO starting\n" * 100 + EMPTIED_BOOTSTRAP)
    assert isinstance(error, ClusterError)
    message = str(error)
    assert message.startswith("kafka-3 exited during startup:\n")
    assert "bootstrap.checkpoint is empty" in message
    assert "A KRaft node cannot start after a power loss" in message
    assert "written_back_s: 30" in message and "-at-32s.yaml" in message
    assert len(message.splitlines()) == 1 + STARTUP_LOG_LINES + 1  # the heading, the log's tail, the hint


def test_another_exit_shows_the_logs_tail_and_claims_no_cause() -> None:
    logs = "".join(f"line {i}\n" for i in range(100)) + "ERROR Exiting Kafka due to fatal exception\n"
    message = str(startup_failure("controller-1", logs))
    tail = logs.splitlines()[-STARTUP_LOG_LINES:]
    assert message.splitlines() == ["controller-1 exited during startup:", *tail]
