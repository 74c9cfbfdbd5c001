"""The panel in a real headless Chromium against a real server process (SQLite)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from live_server import LiveServer, start_server, stop_server
from memory_bank.store import api_keys, memory_writes
from memory_bank.store.engine import make_engine, writing
from polling import wait_for

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
UNDO_MS = 700  # the tests' undo window; the panel's default stays 5 s
WAIT = 20  # seconds a condition may take on a busy machine (a ceiling, not a measurement)
AGENT = ("mcp:read", "mcp:write")
ALL = api_keys.PERSONAL_SCOPES
SHOTS = os.environ.get("MEMORY_BANK_SCREENSHOTS")  # a directory: save screenshots there


def _require_chromium() -> None:
    """Skip without Chromium locally; in CI a missing browser is a failure."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    if missing:
        message = f"{', '.join(missing)} missing; run `make browser`"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[LiveServer, sa.Engine]]:
    """One server for this module; each test works as its own user."""
    _require_chromium()
    folder = Path(tempfile.mkdtemp(prefix="mb-panel-"))
    url = f"sqlite:///{folder / 'panel.db'}"
    server = start_server(url)
    engine = make_engine(url, 1)
    yield server, engine
    engine.dispose()
    stop_server(server)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def browser(live: Any) -> Iterator[Any]:
    """Headless Chromium from Debian, driven by its own chromedriver (nothing downloaded)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="mb-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        "--window-size=1280,900",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


class Panel:
    """The browser, the server and one user's keys, with the steps tests repeat."""

    def __init__(self, driver: Any, server: LiveServer, engine: sa.Engine, user: str) -> None:
        self.driver = driver
        self.base = server.base_url
        self.engine = engine
        self.user = user
        self.key = self.new_key(ALL, "panel-test")

    def new_key(
        self, scopes: tuple[str, ...], source: str, org: str | None = None, user: str | None = None
    ) -> str:
        """A key for this user (or another), optionally in an org."""
        who = user or self.user
        secret, _ = writing(self.engine, lambda c: api_keys.create_key(c, who, scopes, source, org))
        return secret

    def api(self, method: str, path: str, key: str | None = None, **kw: Any) -> httpx.Response:
        """Call the API directly (to seed or check)."""
        headers = {"Authorization": f"Bearer {key or self.key}", **kw.pop("headers", {})}
        return httpx.request(method, self.base + path, headers=headers, timeout=10, **kw)

    def save(self, content: str, key: str | None = None, **body: Any) -> dict[str, Any]:
        """Save a memory (or a draft) through the API."""
        r = self.api("POST", "/v1/memory", key, json={"content": content, **body})
        assert r.status_code in (201, 202), r.text
        return r.json()

    def open(self, query: str = f"?undo_ms={UNDO_MS}") -> None:
        """Load the panel signed out."""
        self.driver.get(self.base + "/" + query)
        self.driver.execute_script("sessionStorage.clear()")
        self.driver.get(self.base + "/" + query)
        self.wait_for(lambda d: d.find_element("id", "signin").is_displayed())

    def sign_in(self) -> None:
        """Sign in with the user's key through the form."""
        field = self.driver.find_element("id", "key-input")
        field.clear()
        field.send_keys(self.key)
        self.driver.find_element("css selector", "#signin-form button[type=submit]").click()
        self.wait_for(lambda d: d.find_element("id", "memories").is_displayed())
        self.wait_for(
            lambda d: d.find_element("id", "memory-list").get_attribute("aria-busy") is None
        )

    def wait_for(self, condition: Any) -> Any:
        """Wait until condition(driver) is truthy."""
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.support.ui import WebDriverWait

        # Lists are re-rendered while we look; a stale element just means "look again".
        wait = WebDriverWait(self.driver, WAIT, ignored_exceptions=[StaleElementReferenceException])
        return wait.until(condition)

    def cards(self) -> list[Any]:
        """The visible memory cards."""
        return [
            c
            for c in self.driver.find_elements("css selector", "#memory-list > li")
            if c.is_displayed()
        ]

    def card(self, memory_id: str) -> Any:
        """One memory's card."""
        return self.driver.find_element("css selector", f'#memory-list > li[data-id="{memory_id}"]')

    def text(self, element_id: str) -> str:
        """The visible text of an element."""
        return str(self.driver.find_element("id", element_id).text)

    def shot(self, name: str) -> None:
        """Save a screenshot when MEMORY_BANK_SCREENSHOTS names a directory."""
        if SHOTS:
            Path(SHOTS).mkdir(parents=True, exist_ok=True)
            self.driver.save_screenshot(str(Path(SHOTS) / f"{name}.png"))


@pytest.fixture
def panel(live: Any, browser: Any, request: pytest.FixtureRequest) -> Panel:
    """A fresh user, signed out, at the panel."""
    server, engine = live
    user = "u-" + re.sub(r"\W+", "-", request.node.name)[-60:]
    browser.set_window_size(1280, 900)
    return Panel(browser, server, engine, user)


def test_sign_in_and_see_the_list(panel):
    panel.save("The team lunch is on Fridays", tags=["team"])
    panel.save(
        "We dropped Acme as a vendor after the Q3 price change",
        tags=["vendors", "acme"],
        contexts=[
            {
                "snippet": "Let's drop Acme, the new pricing is too high.",
                "conversation_id": "conv-42",
                "message_id": "msg-7",
                "origin": "active_conversation",
            }
        ],
    )
    panel.open()
    panel.shot("signed-out")
    panel.sign_in()
    assert panel.key not in panel.driver.current_url
    cards = panel.cards()
    assert [c.find_element("css selector", ".content").text for c in cards] == [
        "We dropped Acme as a vendor after the Q3 price change",
        "The team lunch is on Fridays",
    ]
    first = cards[0]
    assert [t.text for t in first.find_elements("css selector", ".tag")] == ["vendors", "acme"]
    assert "from panel-test" in first.text
    assert first.find_element("css selector", "time").get_attribute("datetime").endswith("Z")
    first.find_element("css selector", "summary").click()
    context = first.find_element("css selector", ".context")
    assert "Let's drop Acme" in context.text
    assert "conversation conv-42, message msg-7" in context.text
    assert "active conversation" in context.text
    panel.shot("list")


def test_empty_state_and_search_with_scores(panel):
    panel.open()
    panel.sign_in()
    assert "No memories yet" in panel.text("memories-status")
    panel.save("We dropped Acme as a vendor after the Q3 price change")
    panel.save("Acme support phone line is slow")
    panel.save("The team lunch is on Fridays")
    search = panel.driver.find_element("id", "search-input")
    search.send_keys("what did we decide about the Acme vendor?")
    search.submit()
    panel.wait_for(lambda d: "best first" in panel.text("memories-status"))
    # This server runs with semantic search off: the panel says the ranking was by words.
    assert "Ranked by words only (lexical)." in panel.text("memories-status")
    cards = panel.cards()
    assert len(cards) == 2
    assert cards[0].find_element("css selector", ".content").text.startswith("We dropped Acme")
    scores = [float(c.find_element("css selector", ".score").text.split()[1]) for c in cards]
    assert scores[0] >= scores[1] > 0
    panel.shot("search")
    panel.driver.find_element("id", "search-clear").click()
    panel.wait_for(lambda d: len(panel.cards()) == 3)


def test_personal_and_organisation_filter_marks_shared_memories(panel):
    org = "org-" + panel.user[-24:]
    member = (*ALL, "org:write")
    panel.key = panel.new_key(member, "panel-test", org=org)
    colleague = panel.new_key(member, "claude-desktop", org=org, user=panel.user + "-colleague")
    outsider = panel.new_key(member, "t", org=org + "-other", user=panel.user + "-outsider")
    panel.save("My own note: deploys make me nervous")
    panel.save("Deploys: drain the queue worker first", key=colleague, scope="org")
    panel.save("Another org's deploy secret", key=outsider, scope="org")
    panel.open()
    panel.sign_in()

    def shown() -> list[tuple[str, str]]:
        out = []
        for card in panel.cards():
            badges = card.find_elements("css selector", ".badge")
            out.append(
                (
                    card.find_element("css selector", ".content").text,
                    badges[0].text if badges else "",
                )
            )
        return out

    panel.wait_for(lambda d: len(panel.cards()) == 2)
    assert shown() == [
        (
            "Deploys: drain the queue worker first",
            f"Organisation · saved by {panel.user}-colleague",
        ),
        ("My own note: deploys make me nervous", ""),
    ]
    assert "shared" in panel.cards()[0].get_attribute("class")
    panel.shot("organisation")

    def choose(label: str) -> None:
        panel.driver.find_element("css selector", f'#scope-filter input[value="{label}"]').click()

    choose("user")
    panel.wait_for(lambda d: [c for c, _ in shown()] == ["My own note: deploys make me nervous"])
    choose("org")
    panel.wait_for(lambda d: [c for c, _ in shown()] == ["Deploys: drain the queue worker first"])
    search = panel.driver.find_element("id", "search-input")
    search.send_keys("deploys")
    search.submit()
    panel.wait_for(lambda d: "best first" in panel.text("memories-status"))
    assert [c for c, _ in shown()] == ["Deploys: drain the queue worker first"]
    choose("all")
    panel.wait_for(lambda d: len(panel.cards()) == 2)
    assert "Another org" not in panel.driver.find_element("id", "memory-list").text


def test_delete_then_undo_is_still_there_after_reload(panel):
    panel.save("Dentist appointment moved to Tuesday 3 pm", tags=["health"])
    keep = panel.save("Keep this one: the office wifi password changes monthly")["memory"]
    panel.open("?undo_ms=60000")  # a long window: the undo happens well inside it
    panel.sign_in()
    from selenium.webdriver.common.keys import Keys

    # By keyboard: Enter on the card's Delete, then Enter on Undo, which has the focus.
    panel.card(keep["id"]).find_element("css selector", "button.danger").send_keys(Keys.ENTER)
    assert not panel.card(keep["id"]).is_displayed()
    toast = panel.driver.find_element("id", "toast")
    assert toast.is_displayed() and "Memory deleted" in toast.text
    panel.shot("undo-toast")
    undo = panel.driver.find_element("id", "toast-undo")
    assert panel.driver.switch_to.active_element == undo
    undo.send_keys(Keys.ENTER)
    panel.wait_for(lambda d: panel.card(keep["id"]).is_displayed())
    panel.driver.refresh()  # leaving the page would send a pending delete; none is pending
    panel.wait_for(lambda d: len(panel.cards()) == 2)
    assert panel.api("GET", f"/v1/memory/{keep['id']}").status_code == 200


def test_delete_without_undo_is_gone_after_the_window(panel):
    gone = panel.save("Forget this one")["memory"]
    kept = panel.save("But not this one")["memory"]
    panel.open()
    panel.sign_in()
    panel.card(gone["id"]).find_element("css selector", "button.danger").click()
    # Hidden at once, sent only when the window closes, then the toast goes away.
    panel.wait_for(lambda d: not d.find_element("id", "toast").is_displayed())
    panel.wait_for(lambda d: panel.api("GET", f"/v1/memory/{gone['id']}").status_code == 404)
    panel.driver.refresh()
    panel.wait_for(lambda d: [c.get_attribute("data-id") for c in panel.cards()] == [kept["id"]])


def test_pending_delete_is_sent_when_the_page_is_left(panel):
    doomed = panel.save("Leave the page while this waits")["memory"]
    panel.open("?undo_ms=60000")
    panel.sign_in()
    panel.card(doomed["id"]).find_element("css selector", "button.danger").click()
    assert panel.api("GET", f"/v1/memory/{doomed['id']}").status_code == 200  # still waiting
    panel.driver.get("about:blank")
    panel.wait_for(lambda d: panel.api("GET", f"/v1/memory/{doomed['id']}").status_code == 404)


def test_confirm_and_reject_drafts(panel):
    r = panel.api("PUT", "/v1/memory/settings", json={"review_required": True})
    assert r.json()["review_in_effect"] is True
    agent = panel.new_key(AGENT, "claude-desktop")
    first = panel.save(
        "Alice prefers window seats", key=agent, tags=["travel"], contexts=[{"snippet": "window!"}]
    )
    second = panel.save("Alice's card PIN is 1234", key=agent)
    assert first["status"] == second["status"] == "pending_review"
    panel.open()
    panel.sign_in()
    assert panel.cards() == []
    panel.wait_for(lambda d: panel.text("review-count") == "2")
    panel.driver.find_element("id", "tab-review").click()
    panel.wait_for(lambda d: len(d.find_elements("css selector", "#draft-list > li")) == 2)
    panel.shot("review")
    keep = panel.driver.find_element("css selector", f'li[data-id="{first["draft"]["id"]}"]')
    content = keep.find_element("css selector", "textarea")
    content.clear()
    content.send_keys("Alice prefers aisle seats on long flights")
    tags = keep.find_element("css selector", "input")
    tags.clear()
    tags.send_keys("travel, seats")
    keep.find_element("xpath", ".//button[text()='Confirm']").click()
    panel.wait_for(lambda d: "Confirmed" in panel.text("toast-text"))
    drop = panel.driver.find_element("css selector", f'li[data-id="{second["draft"]["id"]}"]')
    drop.find_element("xpath", ".//button[text()='Reject']").click()
    panel.wait_for(lambda d: "Nothing waits for review" in panel.text("review-status"))
    assert not panel.driver.find_element("id", "review-count").is_displayed()
    found = panel.api("GET", "/v1/memory/search", params={"q": "aisle seats"}).json()["results"]
    assert [(m["content"], m["tags"], m["source"]) for m in found] == [
        ("Alice prefers aisle seats on long flights", ["travel", "seats"], "claude-desktop")
    ]
    assert panel.api("GET", "/v1/memory/search", params={"q": "PIN"}).json() == {
        "results": [],
        "mode": "lexical",
    }
    for result in (first, second):
        draft_url = f"/v1/memory/drafts/{result['draft']['id']}"
        assert panel.api("GET", draft_url).status_code == 404
    panel.driver.find_element("id", "tab-memories").click()
    panel.wait_for(lambda d: len(panel.cards()) == 1)


def test_copy_prompt_button(panel):
    panel.open()
    panel.sign_in()
    panel.driver.execute_cdp_cmd(
        "Browser.grantPermissions",
        {
            "origin": panel.base,
            "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"],
        },
    )
    served = panel.api("GET", "/v1/memory/prompt", headers={"Accept": "text/markdown"})
    panel.driver.find_element("id", "copy-prompt").click()
    if served.status_code == 200:
        panel.wait_for(lambda d: "Prompt copied" in panel.text("toast-text"))
        copied = panel.driver.execute_async_script(
            "navigator.clipboard.readText().then(arguments[0], e => arguments[0]('ERR ' + e))"
        )
        assert copied == served.text and "Memory Bank" in copied
    else:
        # Until the prompt route exists on this server, the button says so instead of failing.
        assert served.status_code == 404
        panel.wait_for(
            lambda d: "does not serve the Memory Bank prompt" in panel.text("toast-text")
        )


def test_stored_markup_is_shown_as_text_and_never_runs(panel):
    evil = "<img src=x onerror=alert(1)>"
    saved = panel.save(
        evil, tags=["<b>bold</b>"], contexts=[{"snippet": "<script>alert(2)</script>"}]
    )["memory"]
    panel.open()
    panel.sign_in()
    card = panel.card(saved["id"])
    assert card.find_element("css selector", ".content").text == evil
    assert card.find_element("css selector", ".tag").text == "<b>bold</b>"
    card.find_element("css selector", "summary").click()
    assert card.find_element("css selector", "blockquote").text == "<script>alert(2)</script>"
    driver = panel.driver
    assert (
        driver.execute_script("return document.querySelectorAll('img, b, #main script').length")
        == 0
    )
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018 - reading it is the check


def test_one_time_sign_in_link(panel, live):
    server, _ = live
    match = re.search(r"(http://\S+/#signin=\S+)", server.first_output)
    assert match, server.first_output
    link = match.group(1)
    panel.open()  # signed out, like a new tab
    panel.driver.get("about:blank")
    panel.driver.get(link)
    panel.wait_for(lambda d: d.find_element("id", "memories").is_displayed())
    assert "signin" not in panel.driver.current_url and "#" not in panel.driver.current_url
    key = panel.driver.execute_script("return sessionStorage.getItem('memory-bank.key')")
    assert key.startswith("mb_") and key not in panel.driver.current_url
    # The same link again: refused, and the page says why.
    panel.open()
    panel.driver.get(link)  # pasted into the open panel: only the fragment changes
    panel.wait_for(lambda d: "already used" in panel.text("signin-error"))
    assert "signin" not in panel.driver.current_url


def test_signed_out_states_and_phone_width(panel):
    panel.save("Readable on a phone, with a long sentence that has to wrap nicely", tags=["ui"])
    panel.open()
    bad = panel.driver.find_element("id", "key-input")
    bad.send_keys("mb_not-a-real-key-at-all-000000000000")
    bad.submit()
    panel.wait_for(lambda d: "not accepted" in panel.text("signin-error"))
    panel.driver.set_window_size(390, 844)
    panel.sign_in()
    width = panel.driver.execute_script("return document.documentElement.scrollWidth")
    viewport = panel.driver.execute_script("return window.innerWidth")
    assert width <= viewport  # nothing forces sideways scrolling
    panel.shot("phone")
    panel.driver.find_element("id", "sign-out").click()
    panel.wait_for(lambda d: d.find_element("id", "signin").is_displayed())
    assert panel.driver.execute_script("return sessionStorage.length") == 0
    assert "Signed out" in panel.text("signin-error")


def test_error_states_when_memory_is_switched_off_for_the_user(panel):
    from memory_bank.store import user_settings

    panel.save("Still here after the switch")
    panel.open()
    panel.sign_in()
    writing(panel.engine, lambda c: user_settings.change(c, panel.user, memory_disabled=True))
    search = panel.driver.find_element("id", "search-input")
    search.send_keys("switch")
    search.submit()
    panel.wait_for(lambda d: "switched off for this user" in panel.text("memories-status"))
    status = panel.driver.find_element("id", "memories-status")
    assert "error" in status.get_attribute("class")
    assert panel.cards() == []  # no stale cards under the error
    panel.shot("error")
    writing(panel.engine, lambda c: user_settings.change(c, panel.user, memory_disabled=False))
    status.find_element("xpath", ".//button[text()='Retry']").click()
    panel.wait_for(lambda d: "1 memory matches" in panel.text("memories-status"))
    # Signing in while switched off says why instead of showing an empty list.
    writing(panel.engine, lambda c: user_settings.change(c, panel.user, memory_disabled=True))
    panel.open()
    field = panel.driver.find_element("id", "key-input")
    field.send_keys(panel.key)
    field.submit()
    panel.wait_for(lambda d: "switched off for this user" in panel.text("signin-error"))


def test_edit_inline_conflict_history_and_restore(panel):
    saved = panel.save("We signed Acme in March", tags=["acme"])["memory"]
    panel.open()
    panel.sign_in()
    card = panel.card(saved["id"])
    card.find_element("xpath", ".//button[text()='Edit']").click()
    editor = panel.wait_for(
        lambda d: panel.card(saved["id"]).find_element("css selector", "textarea")
    )
    editor.clear()
    editor.send_keys("We re-signed Acme in January")
    panel.card(saved["id"]).find_element("xpath", ".//button[text()='Save']").click()
    panel.wait_for(lambda d: panel.card(saved["id"]).get_attribute("data-revision") == "2")
    assert panel.card(saved["id"]).find_element("css selector", ".content").text == (
        "We re-signed Acme in January"
    )
    got = panel.api("GET", f"/v1/memory/{saved['id']}").json()["memory"]
    assert got["content"] == "We re-signed Acme in January" and got["revision"] == 2
    # Someone else edits it meanwhile: the panel's next edit is refused with a conflict message.
    other = panel.api(
        "PATCH", f"/v1/memory/{saved['id']}", json={"content": "Acme renewed in February"}
    )
    assert other.status_code == 200
    panel.card(saved["id"]).find_element("xpath", ".//button[text()='Edit']").click()
    editor = panel.wait_for(
        lambda d: panel.card(saved["id"]).find_element("css selector", "textarea")
    )
    editor.send_keys(" (checked)")
    panel.card(saved["id"]).find_element("xpath", ".//button[text()='Save']").click()
    alert = panel.wait_for(
        lambda d: panel.card(saved["id"]).find_element("css selector", ".editor .error").text
    )
    assert "changed since you opened it" in alert and "revision 3" in alert
    assert panel.api("GET", f"/v1/memory/{saved['id']}").json()["memory"]["revision"] == 3
    # History after a reload shows three revisions; restoring the first appends a fourth.
    panel.driver.refresh()
    panel.wait_for(lambda d: d.find_element("id", "memories").is_displayed())
    panel.wait_for(lambda d: panel.card(saved["id"]).get_attribute("data-revision") == "3")
    panel.card(saved["id"]).find_element(
        "xpath", ".//button[starts-with(text(), 'History')]"
    ).click()
    panel.wait_for(
        lambda d: len(panel.card(saved["id"]).find_elements("css selector", ".revision")) == 3
    )
    first = panel.card(saved["id"]).find_element("css selector", '.revision[data-revision="1"]')
    assert "We signed Acme in March" in first.text
    first.find_element("xpath", ".//button[text()='Restore']").click()
    panel.wait_for(lambda d: panel.card(saved["id"]).get_attribute("data-revision") == "4")
    panel.wait_for(
        lambda d: len(panel.card(saved["id"]).find_elements("css selector", ".revision")) == 4
    )
    assert panel.card(saved["id"]).find_element("css selector", ".content").text == (
        "We signed Acme in March"
    )
    history = panel.api("GET", f"/v1/memory/{saved['id']}/revisions").json()["revisions"]
    assert [r["revision"] for r in history] == [4, 3, 2, 1]
    assert history[0]["content"] == "We signed Acme in March"


def test_a_draft_of_an_edit_shows_the_memory_as_it_is_and_confirm_applies_it(panel):
    saved = panel.save("The standup is at 9:30", tags=["team"])["memory"]
    r = panel.api("PUT", "/v1/memory/settings", json={"review_required": True})
    assert r.json()["review_in_effect"] is True
    agent = panel.new_key(AGENT, "claude-desktop")
    proposed = panel.api(
        "PATCH", f"/v1/memory/{saved['id']}", agent, json={"content": "The standup is at 10:00"}
    )
    assert proposed.status_code == 202, proposed.text
    draft_id = proposed.json()["draft"]["id"]
    panel.open()
    panel.sign_in()
    panel.driver.find_element("id", "tab-review").click()
    card = panel.wait_for(
        lambda d: d.find_element("css selector", f'#draft-list > li[data-id="{draft_id}"] .was')
    )
    assert "revision 1" in card.text and "The standup is at 9:30" in card.text
    item = panel.driver.find_element("css selector", f'li[data-id="{draft_id}"]')
    assert item.find_element("css selector", "textarea").get_attribute("value") == (
        "The standup is at 10:00"
    )
    item.find_element("xpath", ".//button[text()='Confirm']").click()
    panel.wait_for(lambda d: "the memory is updated" in panel.text("toast-text"))
    got = panel.api("GET", f"/v1/memory/{saved['id']}").json()["memory"]
    assert (got["content"], got["revision"]) == ("The standup is at 10:00", 2)


def test_tag_and_date_filters_narrow_the_list_and_search(panel):
    from datetime import timedelta

    from memory_bank.ids import utcnow
    from memory_bank.search.document import postings_of
    from memory_bank.store.owners import Owner

    def plant(content: str, tags: list[str], days_ago: int) -> None:
        when = utcnow() - timedelta(days=days_ago)
        writing(
            panel.engine,
            lambda c: memory_writes.insert_memory(
                c,
                Owner(panel.user, None, "panel-test"),
                content,
                tags,
                [],
                postings_of(content, tags, []),
                created_at=when,
            ),
        )

    plant("Deploys go out on Tuesdays", ["Deploy"], 40)
    plant("Deploy freeze over the holidays", ["deploy", "ops"], 3)
    plant("The ops rota is in the wiki", ["ops"], 2)
    plant("Lunch is on Fridays", [], 1)
    panel.open()
    panel.sign_in()
    panel.wait_for(lambda d: len(panel.cards()) == 4)

    def contents() -> list[str]:
        return [c.find_element("css selector", ".content").text for c in panel.cards()]

    tags = panel.driver.find_element("id", "filter-tags")
    tags.send_keys("DEPLOY")
    panel.driver.find_element("css selector", "#filter-form button[type=submit]").click()
    panel.wait_for(
        lambda d: contents() == ["Deploy freeze over the holidays", "Deploys go out on Tuesdays"]
    )
    assert panel.driver.find_element("id", "filter-clear").is_displayed()
    # A date range (UTC days, both ends included) narrows further: the 40-day-old one goes.
    start = (utcnow() - timedelta(days=10)).strftime("%Y-%m-%d")

    def pick_date(field: str, day: str) -> None:
        # As a date picker does: set the field's value and fire its change. Typing the digits
        # was flaky on a loaded machine: Chromium resets a date segment when the next
        # keystroke comes late, so a slow "11272026" became another date.
        panel.driver.execute_script(
            "const f = document.getElementById(arguments[0]); f.value = arguments[1];"
            "f.dispatchEvent(new Event('change', {bubbles: true}));",
            field,
            day,
        )

    pick_date("filter-from", start)
    panel.wait_for(lambda d: contents() == ["Deploy freeze over the holidays"])
    panel.shot("filters")
    # Two tags: every one must be carried; a search keeps the filters.
    tags.clear()
    tags.send_keys("ops, deploy")
    panel.driver.find_element("css selector", "#filter-form button[type=submit]").click()
    panel.wait_for(lambda d: contents() == ["Deploy freeze over the holidays"])
    search = panel.driver.find_element("id", "search-input")
    search.send_keys("ops")
    search.submit()
    panel.wait_for(lambda d: "among the filtered ones" in panel.text("memories-status"))
    assert contents() == ["Deploy freeze over the holidays"]
    # "until" a day that ends before it: nothing matches, and says so.
    until = (utcnow() - timedelta(days=5)).strftime("%Y-%m-%d")
    pick_date("filter-until", until)
    panel.wait_for(lambda d: "No memory matches" in panel.text("memories-status"))
    assert contents() == []
    panel.driver.find_element("id", "search-clear").click()
    panel.wait_for(lambda d: "No memory matches these filters" in panel.text("memories-status"))
    panel.driver.find_element("id", "filter-clear").click()
    panel.wait_for(lambda d: len(panel.cards()) == 4)


def test_a_search_says_it_was_hybrid_once_vectors_exist(browser):
    """A server with semantic search on (an OpenAI-compatible embedding server process): the
    panel names the mode the answer came in, lexical before the vector exists, hybrid after."""
    from embedding_servers import EmbeddingServers

    servers = EmbeddingServers()
    folder = Path(tempfile.mkdtemp(prefix="mb-panel-hybrid-"))
    url = f"sqlite:///{folder / 'hybrid.db'}"
    server = None
    engine = make_engine(url, 1)
    try:
        base = servers("other-minilm")
        server = start_server(
            url,
            {
                "MEMORY_BANK_EMBEDDINGS": f"openai:{base}",
                "MEMORY_BANK_EMBEDDINGS_MODEL": "other-minilm",
            },
        )
        panel = Panel(browser, server, engine, "hana")
        panel.save("Leo has football practice every Saturday")
        question = "What sport does my son do at the weekend?"
        wait_for(lambda: found_in_hybrid(panel, question), "the memory's vector", every=0.2)
        panel.open()
        panel.sign_in()
        field = panel.driver.find_element("id", "search-input")
        field.send_keys(question)
        field.submit()
        panel.wait_for(lambda d: "best first" in panel.text("memories-status"))
        assert "Ranked by meaning and words (hybrid)." in panel.text("memories-status")
        assert panel.cards()[0].find_element("css selector", ".content").text.startswith("Leo")
    finally:
        if server is not None:
            stop_server(server)
        servers.close()
        engine.dispose()
        shutil.rmtree(folder, ignore_errors=True)


def found_in_hybrid(panel: Panel, question: str) -> bool:
    """Whether the API answers the question in hybrid mode with a result (the vector exists)."""
    found = panel.api("GET", "/v1/memory/search", params={"q": question}).json()
    return found["mode"] == "hybrid" and bool(found["results"])


def test_a_search_with_nothing_relevant_says_so_and_offers_the_weaker_matches(browser):
    """A server with the packaged MiniLM (calibrated, so hybrid answers keep the default
    relevance floor): a question the user saved nothing on answers "Nothing relevant", and the
    button re-asks with min_score=0 for the nearest memories, however weak."""
    folder = Path(tempfile.mkdtemp(prefix="mb-panel-floor-"))
    url = f"sqlite:///{folder / 'floor.db'}"
    server = None
    engine = make_engine(url, 1)
    try:
        server = start_server(url, {"MEMORY_BANK_EMBEDDINGS": "local:all-MiniLM-L6-v2"})
        panel = Panel(browser, server, engine, "ines")
        panel.save("Leo has football practice every Saturday")
        panel.save("The team lunch is on Fridays")
        wait_for(
            lambda: found_in_hybrid(panel, "What sport does my son do at the weekend?"),
            "the memories' vectors",
            every=0.2,
        )
        panel.open()
        panel.sign_in()
        field = panel.driver.find_element("id", "search-input")
        field.send_keys("quantum chromodynamics on a lattice")
        field.submit()
        panel.wait_for(lambda d: "Nothing relevant" in panel.text("memories-status"))
        assert panel.cards() == []
        assert "Ranked by meaning and words (hybrid)." in panel.text("memories-status")
        panel.driver.find_element("id", "search-weaker").click()
        panel.wait_for(lambda d: len(panel.cards()) == 2)
        status = panel.text("memories-status")
        assert "Nothing relevant" in status and "however weak" in status
        assert not panel.driver.find_elements("id", "search-weaker")
        scores = [
            float(c.find_element("css selector", ".score").text.split()[1]) for c in panel.cards()
        ]
        assert scores == sorted(scores, reverse=True)
        # A relevant question still answers at once, with no button.
        field = panel.driver.find_element("id", "search-input")
        field.clear()
        field.send_keys("What sport does my son do at the weekend?")
        field.submit()
        panel.wait_for(lambda d: "best first" in panel.text("memories-status"))
        assert "Nothing relevant" not in panel.text("memories-status")
        assert panel.cards()[0].find_element("css selector", ".content").text.startswith("Leo")
        assert not panel.driver.find_elements("id", "search-weaker")
    finally:
        if server is not None:
            stop_server(server)
        engine.dispose()
        shutil.rmtree(folder, ignore_errors=True)
