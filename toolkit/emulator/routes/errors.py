"""Error answers of the emulator: `{"error": {"status": int, "message": str}}`."""

from __future__ import annotations

from starlette.responses import JSONResponse

__all__ = ["EmulatorError", "error"]


class EmulatorError(Exception):
    """Raised anywhere in a request; the app turns it into the JSON error answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error(status: int, message: str) -> JSONResponse:
    """The service's error answer: `{"error": {"status", "message"}}` with that status."""
    return JSONResponse({"error": {"status": status, "message": message}}, status_code=status)
