"""Docker engine errors as the docker SDK raises them, for tests of code that meets them."""

from __future__ import annotations

from docker.errors import APIError


class _Response:
    reason = "fake"
    url = "http://docker/fake"

    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


def api_error(status: int, explanation: str | None = None) -> APIError:
    """The APIError of an engine answering `status` (and `explanation`, its words)."""
    return APIError(f"{status} fake engine error", response=_Response(status), explanation=explanation)  # type: ignore[arg-type]
