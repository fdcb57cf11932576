"""Error codes and the typed errors services raise; one handler renders them (CONTRACT §0)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    VALIDATION_ERROR = "VALIDATION_ERROR"
    PROFILE_INVALID = "PROFILE_INVALID"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    FORBIDDEN = "FORBIDDEN"
    ORIGIN_NOT_ALLOWED = "ORIGIN_NOT_ALLOWED"
    EMAIL_NOT_VERIFIED = "EMAIL_NOT_VERIFIED"
    INTEGRATION_KEY_ONLY = "INTEGRATION_KEY_ONLY"
    IMPERSONATION_FORBIDDEN = "IMPERSONATION_FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    MAPPING_BREAKS_CONFIG = "MAPPING_BREAKS_CONFIG"
    MAPPING_MANAGED_BY_INTEGRATION = "MAPPING_MANAGED_BY_INTEGRATION"
    INDEX_HAS_INTEGRATION = "INDEX_HAS_INTEGRATION"
    CONFLICT = "CONFLICT"
    IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
    RATE_LIMITED = "RATE_LIMITED"
    INTERNAL = "INTERNAL"
    UNAVAILABLE = "UNAVAILABLE"
    SEARCH_TIMEOUT = "SEARCH_TIMEOUT"


STATUS_BY_CODE: dict[ErrorCode, int] = {
    ErrorCode.VALIDATION_ERROR: 400,
    ErrorCode.PROFILE_INVALID: 400,
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.ORIGIN_NOT_ALLOWED: 403,
    ErrorCode.EMAIL_NOT_VERIFIED: 403,
    ErrorCode.INTEGRATION_KEY_ONLY: 403,
    ErrorCode.IMPERSONATION_FORBIDDEN: 403,
    ErrorCode.QUOTA_EXCEEDED: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.MAPPING_BREAKS_CONFIG: 409,
    ErrorCode.MAPPING_MANAGED_BY_INTEGRATION: 409,
    ErrorCode.INDEX_HAS_INTEGRATION: 409,
    ErrorCode.CONFLICT: 409,
    ErrorCode.IDEMPOTENCY_KEY_REUSED: 409,
    ErrorCode.PAYLOAD_TOO_LARGE: 413,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.INTERNAL: 500,
    ErrorCode.UNAVAILABLE: 503,
    ErrorCode.SEARCH_TIMEOUT: 503,
}


class ServiceError(Exception):
    """A failure with an error code; rendered as ``{"error": {code, message, details}}``."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        details: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers

    @property
    def status(self) -> int:
        return STATUS_BY_CODE[self.code]

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": str(self.code), "message": self.message}
        if self.details is not None:
            error["details"] = self.details
        return {"error": error}


def not_found(what: str = "Resource") -> ServiceError:
    return ServiceError(ErrorCode.NOT_FOUND, f"{what} not found")


def forbidden(message: str = "Not allowed for this caller") -> ServiceError:
    return ServiceError(ErrorCode.FORBIDDEN, message)


def unauthenticated(message: str = "Missing or invalid credentials") -> ServiceError:
    return ServiceError(ErrorCode.UNAUTHENTICATED, message)


def conflict(message: str, details: list[dict[str, Any]] | None = None) -> ServiceError:
    return ServiceError(ErrorCode.CONFLICT, message, details)


def validation(message: str, details: list[dict[str, Any]] | None = None) -> ServiceError:
    return ServiceError(ErrorCode.VALIDATION_ERROR, message, details)
