"""A real local SMTP server (aiosmtpd) that keeps every message, so tests can follow emailed links."""

from __future__ import annotations

import re
import threading
import time
from email import message_from_bytes
from email.message import Message

from aiosmtpd.controller import Controller

from tests.fixtures.ports import free_port


class _Handler:
    def __init__(self, box: Mailbox) -> None:
        self.box = box

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd hook name
        message = message_from_bytes(envelope.content)
        with self.box.lock:
            for rcpt in envelope.rcpt_tos:
                self.box.messages.append((rcpt.lower(), message))
        return "250 OK"


class Mailbox:
    def __init__(self) -> None:
        self.port = free_port()
        self.lock = threading.Lock()
        self.messages: list[tuple[str, Message]] = []
        self._controller = Controller(_Handler(self), hostname="127.0.0.1", port=self.port)

    def start(self) -> None:
        self._controller.start()

    def stop(self) -> None:
        self._controller.stop()

    def for_recipient(self, email: str) -> list[Message]:
        with self.lock:
            return [m for rcpt, m in self.messages if rcpt == email.lower()]

    def wait_for(self, email: str, subject_contains: str = "", timeout: float = 5.0) -> Message:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for message in reversed(self.for_recipient(email)):
                if subject_contains.lower() in str(message["Subject"]).lower():
                    return message
            time.sleep(0.02)
        raise AssertionError(f"no email to {email} with subject containing {subject_contains!r}")

    @staticmethod
    def body(message: Message) -> str:
        payload = message.get_payload(decode=True)
        if isinstance(payload, bytes):
            return payload.decode()
        return str(message.get_payload())

    def token_from_last(self, email: str, subject_contains: str = "") -> str:
        """The ``token=`` value of the link in the newest matching email."""
        body = self.body(self.wait_for(email, subject_contains))
        match = re.search(r"[?&]token=([A-Za-z0-9_\-]+)", body)
        assert match, f"no token link in email body: {body!r}"
        return match.group(1)
