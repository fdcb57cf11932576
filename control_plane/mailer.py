"""Outgoing email over SMTP; with no SMTP host configured, messages go to the log instead."""

from __future__ import annotations

import logging
import smtplib
from email.message import EmailMessage

from shared.settings import SmtpSettings

log = logging.getLogger("shopsearch.mail")


class Mailer:
    def __init__(self, smtp: SmtpSettings) -> None:
        self.smtp = smtp

    def send(self, to: str, subject: str, body: str) -> None:
        if not self.smtp.host:
            log.warning("SMTP not configured; email to %s: %s\n%s", to, subject, body)
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
            log.exception("sending email to %s failed; body follows\n%s", to, body)
