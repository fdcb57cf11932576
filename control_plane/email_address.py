"""The one rule for email addresses: register, members, ``shopsearch tenants create`` and sign-in.

An address is accepted when it is syntactically valid (email-validator, no DNS lookups) with a
dotted domain; reserved names that stand for real addresses in docs and tests (``.test``,
``.example``) are accepted, names that cannot be mail domains (``localhost``, ``.local``,
``.invalid``, ``.onion``, ``.arpa``) are not. The stored form is trimmed and lowercased whole,
local part included: mailboxes differing only in case would be two accounts no person can tell
apart, and every major provider treats them as one.

Lookups (sign-in, forgot-password) don't validate: they normalize the same way and simply find
nobody for a malformed address, so sign-in answers it with the same 401 as a wrong password.
"""

from __future__ import annotations

from typing import Annotated

from email_validator import EmailNotValidError, validate_email
from pydantic import AfterValidator, Field

MAX_LENGTH = 320  # RFC 3696 errata; email-validator itself stops at 254


def normalize_email(value: str) -> str:
    """The stored form of ``value``; ValueError (with a reason) when it is not an address."""
    try:
        # test_environment lets the reserved .test TLD through (and never touches DNS).
        checked = validate_email(value.strip(), check_deliverability=False, test_environment=True)
    except EmailNotValidError as exc:
        raise ValueError(str(exc)) from exc
    return checked.normalized.lower()


def lookup_key(value: str) -> str:
    """What to look an address up by: the stored form when valid, else trimmed and lowercased."""
    try:
        return normalize_email(value)
    except ValueError:
        return value.strip().lower()


EmailAddress = Annotated[
    str,
    Field(max_length=MAX_LENGTH, json_schema_extra={"format": "email"}),
    AfterValidator(normalize_email),
]
"""A new address (register, members): validated and normalized; 400 VALIDATION_ERROR otherwise."""

EmailLookup = Annotated[str, Field(max_length=MAX_LENGTH), AfterValidator(lookup_key)]
"""An address to find an account by (sign-in, forgot-password): never refused for its syntax."""
