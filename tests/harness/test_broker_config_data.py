"""Broker overrides are data: rendered so that Kafka's properties reader gets back exactly the value
given (and run.json records), and refused, naming the key, when no properties file can hold them."""

from __future__ import annotations

import pytest
from java_properties import read_properties

from contract.errors import ConfigError
from harness.broker_config import (
    KafkaVersion,
    broker_settings,
    check_override_syntax,
    escape_value,
    render_broker_config,
    render_properties,
    validate_overrides,
)
from harness.cluster import ClusterSpec

TRICKY_VALUES = [
    r"C:\new\tab",  # backslashes that printf %b or Properties would turn into a newline and a tab
    "ends in a backslash\\",  # would join the next line
    "\\\\double",
    "  leading spaces",  # Properties drops the whitespace before a value
    "a=b:c #not a comment !",
    "grüße ☃ 😀",  # not ISO-8859-1; the last one is two UTF-16 units in Java
    "",
]


@pytest.mark.parametrize("value", TRICKY_VALUES)
def test_every_value_reads_back_as_given(value: str) -> None:
    rendered = render_properties({"ssl.keystore.location": value, "num.io.threads": 8})
    assert rendered.isascii() and rendered.count("\n") == 2, rendered
    assert read_properties(rendered.encode("iso-8859-1")) == {
        "ssl.keystore.location": value,
        "num.io.threads": "8",
    }


def test_broker_file_reads_back_as_its_settings() -> None:
    overrides = {
        "min.insync.replicas": 2,
        "unclean.leader.election.enable": False,
        "ssl.keystore.location": r"C:\k",
    }
    version = KafkaVersion.parse("0.9.0.1")
    settings = broker_settings(version, 1, "172.28.0.101", ["172.28.0.11"], 3, overrides)
    rendered = render_broker_config(version, 1, "172.28.0.101", ["172.28.0.11"], 3, overrides)
    assert read_properties(rendered.encode("ascii")) == settings
    assert settings["unclean.leader.election.enable"] == "false"
    assert settings["ssl.keystore.location"] == r"C:\k"


@pytest.mark.parametrize(
    "value", ["2\nunclean.leader.election.enable=true", "2\r", "x\ty", "\x00", "a\x7fb", "\x1b[31m"]
)
def test_control_characters_are_refused_naming_the_key(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_override_syntax({"min.insync.replicas": value})
    message = str(info.value)
    assert message.startswith("broker config 'min.insync.replicas': the value ")
    assert "control character" in message
    with pytest.raises(ConfigError, match=r"'min\.insync\.replicas'"):
        escape_value("min.insync.replicas", value)
    # Before any image is looked at: a scenario or `--config` fails at once.
    with pytest.raises(ConfigError, match=r"'min\.insync\.replicas'"):
        ClusterSpec(broker_config={"min.insync.replicas": value})


@pytest.mark.parametrize(
    "key", ["", "a=b", "x\ny", " min.insync.replicas", "key with space", "#comment", "ключ"]
)
def test_keys_that_are_not_property_names_are_refused(key: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate_overrides({key: "1"}, [], "0.9.0.1")  # even when the image lists no keys
    assert str(info.value).startswith(f"broker config key {key!r} is not a property name")


def test_an_injected_line_cannot_reach_the_file() -> None:
    """The attack of the issue: a value carrying a second property past the key and type checks."""
    with pytest.raises(ConfigError):
        render_properties({"num.io.threads": "8\nunclean.leader.election.enable=true"})
    with pytest.raises(ConfigError, match="must be an integer"):  # a literal backslash-n: not a number
        validate_overrides({"min.insync.replicas": "2\\nunclean.leader.election.enable=true"}, [], "0.9.0.1")
    # ...and in a string setting it is data, never a line break.
    rendered = render_properties({"ssl.keystore.location": "2\\nunclean.leader.election.enable=true"})
    assert read_properties(rendered.encode()) == {
        "ssl.keystore.location": "2\\nunclean.leader.election.enable=true"
    }
