from collections.abc import Callable

class Recorder:
    """Writes and records one producer process's writes; see harness/producer.py."""

    attempted: int
    acked: int
    failed: int
    indeterminate: int
    def __init__(
        self,
        *,
        fields: bytes,
        value_prefix: bytes,
        payload_prefix: bytes,
        padding: bytes,
        topic: str,
        partitions: int,
        clock_start_ns: int,
        sink: Callable[[bytes], None],
        on_error: Callable[[str, int, object], tuple[str, bool]],
        batch_events: int,
        delay_ns: int,
    ) -> None: ...
    def run(self, producer: object, limit: int) -> None: ...
    def turn(self, producer: object) -> None: ...
    def flush(self) -> None: ...
    def stop(self) -> None: ...
    def latencies(self) -> list[int]: ...
