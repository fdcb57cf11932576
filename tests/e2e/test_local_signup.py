"""Issue 36 items 3 and 5, as a newcomer meets them: a real ``shopsearch serve --host 127.0.0.1`` with
no mail server, a sign-up in the cabinet (Playwright driving Debian's Chromium), the verification
link read from the service's log (whole, because the service listens on loopback only), opened;
then sign-in, a first project, and the project's indices with the first-run checklist
(index → upload → profile → public key → storefront snippet). README "Sign up in the cabinet".
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from tests.conftest import ROOT
from tests.fixtures.ports import free_port

pytestmark = pytest.mark.long  # a real server and a browser: collected first (tests/parallel.py)

PASSWORD = "a long local password"


@pytest.fixture(scope="module")
def local_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``shopsearch serve`` on 127.0.0.1 with no SMTP setting; its log (stderr) goes to a file."""
    work = tmp_path_factory.mktemp("local-signup")
    log = work / "serve.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHOPSEARCH_")}
    env["SHOPSEARCH_DATA_DIR"] = str(work / "data")
    port = free_port()
    installed = Path(sys.executable).parent / "shopsearch"
    cli = [str(installed)] if installed.exists() else [sys.executable, "-m", "cli.main"]
    with log.open("w") as out:
        process = subprocess.Popen([*cli, "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                                   cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(base + "/ready", timeout=1).status_code == 200:
                    break
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        yield base, log
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()


def logged_link(log: Path, email: str, timeout: float = 15) -> str:
    """The verification link of the mail the service logged for ``email``."""
    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text()
        at = text.find(f"email to {email}")
        if at >= 0:
            match = re.search(r"https?://\S+/verify-email\?token=\S+", text[at:])
            if match:
                return match.group(0)
        assert time.monotonic() < deadline, f"no mail to {email} in the log:\n{text[-3000:]}"
        time.sleep(0.2)


def test_sign_up_on_loopback_without_smtp_to_the_first_run_checklist(local_service, browser):  # type: ignore[no-untyped-def]
    base, log = local_service
    email = f"newcomer-{uuid.uuid4().hex[:8]}@shop.test"
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    # the cabinet and its service only: any request elsewhere fails the test
    outside: list[str] = []
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base)
                  else (outside.append(route.request.url), route.abort()))
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(base + "/#/signup")
        page.get_by_label("Email").fill(email)
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        page.get_by_label("Your name").fill("Nia Newcomer")
        page.get_by_label("Shop or company name").fill("Nia's Phones")
        page.get_by_role("button", name="Create account").click()
        page.get_by_text("Account created").wait_for()
        assert page.get_by_text("writes the whole mail, link included, to its log").is_visible()

        # no SMTP, loopback only: the whole link is in the service's log, and it works
        link = logged_link(log, email)
        assert link.startswith(base + "/verify-email?token=") and "…" not in link
        assert len(link.split("token=", 1)[1]) > 20  # not cut to 6 characters
        page.goto(link)
        page.get_by_text("Your email address is confirmed").wait_for()
        assert "token=" not in page.url

        page.goto(base + "/#/signin")
        page.get_by_label("Email").fill(email)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("heading", level=1, name="Nia's Phones").wait_for()
        # a new organization says what comes next, and one step leads to the project's indices
        expect(page.locator(".empty-state")).to_contain_text("No project yet")
        page.get_by_label("New project name").fill("Web shop")
        page.get_by_role("button", name="Create project").click()
        page.get_by_role("heading", level=1, name="Indices").wait_for()
        steps = page.locator(".checklist li")
        expect(steps).to_have_count(5)
        texts = steps.all_inner_texts()
        for step, word in zip(texts, ["index", "upload", "profile", "key", "shop"], strict=True):
            assert word in step.lower(), texts
        expect(steps.first.locator(".step-state")).to_have_text("Next")

        # a verified account may create keys: the step the unverified could not take
        page.get_by_role("link", name="API keys").click()
        page.get_by_role("heading", level=1, name="API keys").wait_for()
        page.get_by_label("Name").fill("server")
        page.get_by_role("button", name="Create key").click()
        assert page.locator("#new-key").inner_text().startswith("ss_sk_")
    finally:
        context.close()
    assert not errors, errors
    assert not outside, outside
