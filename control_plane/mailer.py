"""Outgoing email over SMTP; with no SMTP host configured, messages go to the log instead.

A logged message never holds a whole token (a link's ``token=`` shows its first 6 characters), so
log readers can't verify or reset someone's account; the full message is logged at DEBUG, and at
WARNING when the service listens only on a loopback address (``SmtpSettings.log_whole``): a local
user signing up in the cabinet then finds a link that works in the log.
"""

from __future__ import annotations

import logging
import re
import smtplib
import threading
from concurrent.futures import ThreadPoolExecutor
from email.message import EmailMessage

from shared.settings import SmtpSettings

log = logging.getLogger("shopsearch.mail")
_TOKEN = re.compile(r"(token=[A-Za-z0-9_\-]{6})[A-Za-z0-9_\-]+")


def masked(body: str) -> str:
    """``body`` with every ``token=`` value cut to its first 6 characters and ``…``."""
    return _TOKEN.sub("\\1…", body)


class Mailer:
    def __init__(self, smtp: SmtpSettings) -> None:
        self.smtp = smtp
        self._outbox: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def send_later(self, to: str, subject: str, body: str) -> None:
        """Hand the message to the mail thread: an SMTP round trip never holds up an answer."""
        with self._lock:
            if self._outbox is None:
                self._outbox = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mail")
            self._outbox.submit(self.send, to, subject, body)

    def close(self) -> None:
        """Deliver what is queued and stop the mail thread (a later ``send_later`` starts a new one)."""
        with self._lock:
            outbox, self._outbox = self._outbox, None
        if outbox is not None:
            outbox.shutdown(wait=True)

    def send(self, to: str, subject: str, body: str) -> None:
        if not self.smtp.host:
            if self.smtp.log_whole:
                log.warning("SMTP not configured (a local service): email to %s: %s\n%s", to, subject, body)
                return
            log.warning("SMTP not configured; email to %s: %s\n%s", to, subject, masked(body))
            log.debug("SMTP not configured; the whole email to %s:\n%s", to, body)
            return
        message = EmailMessage()
        message["From"] = self.smtp.sender
        message["To"] = to
        message["Subject"] = subject
        message.set_content(body)
        try:
            with smtplib.SMTP(self.smtp.host, self.smtp.port, timeout=10) as client:
                if self.smtp.tls:
                    client.starttls()
                if self.smtp.user:
                    client.login(self.smtp.user, self.smtp.password or "")
                client.send_message(message)
        except (OSError, smtplib.SMTPException):
            log.exception("sending email to %s failed; body follows\n%s", to, masked(body))
