"""The pool manager's page in headless Chromium (Debian's chromium and chromium-driver, driven
by selenium): log in with the admin token, assign and unassign a device through the forms, and
check the result through the API; a host token sees its own group and no forms."""

from __future__ import annotations

import os
import shutil

import pytest
from pool_helpers import ADMIN, populate, serving

CHROMIUM = shutil.which("chromium")
DRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="Debian's chromium and chromium-driver are not installed (`make browser` installs them as root)",
)


@pytest.fixture
def pool(tmp_path):
    yield from serving(tmp_path)


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,1600"):
        options.add_argument(arg)
    os.environ.setdefault("SE_OFFLINE", "true")  # never fetch a driver: Debian's is given
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


def test_assign_and_unassign_through_the_page(pool, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import Select, WebDriverWait

    c = pool.client()
    populate(c, [10, 20], 2)
    c.call("POST", "/api/devices/d0/assign", {"vlan": 10})
    wait = WebDriverWait(browser, 15)

    def rows(table: str) -> list[list[str]]:
        trs = browser.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr")
        return [[td.text for td in tr.find_elements(By.TAG_NAME, "td")] for tr in trs]

    def message(text: str) -> str:
        wait.until(ec.text_to_be_present_in_element((By.ID, "message"), text))
        return browser.find_element(By.ID, "message").text

    browser.get(pool.url + "/")
    assert browser.title == "ExpEther pool manager"

    # A wrong token is refused with the API's message.
    browser.find_element(By.ID, "token").send_keys("not-a-token")
    browser.find_element(By.ID, "login").click()
    assert message("401") == "401: unknown or revoked token"
    assert not browser.find_element(By.ID, "app").is_displayed()

    # The admin logs in and sees the pool.
    browser.find_element(By.ID, "token").clear()
    browser.find_element(By.ID, "token").send_keys(ADMIN)
    browser.find_element(By.ID, "login").click()
    message("Logged in.")
    assert rows("devices") == [
        ["1", "d0", "ssd", "02:00:00:02:00:00", "10", "0"],
        ["2", "d1", "ssd", "02:00:00:02:00:01", "-", "-"],
    ]
    assert rows("groups") == [["10", "h10", "d0 (0)"], ["20", "h20", ""]]

    # Assign d1 to h20 through the form; the API shows it.
    Select(browser.find_element(By.ID, "assign-device")).select_by_visible_text("d1 (pool)")
    Select(browser.find_element(By.ID, "assign-vlan")).select_by_visible_text("h20 (VLAN 20)")
    browser.find_element(By.ID, "assign-submit").click()
    assert message("Assigned") == "Assigned d1 to VLAN 20 slot 0."
    d1 = c.call("GET", "/api/devices")[1]
    assert (d1["name"], d1["vlan"], d1["slot"]) == ("d1", 20, 0)
    last = c.call("GET", "/api/audit")[-1]
    assert (last["who"], last["action"], last["target"], last["result"]) == (
        "admin:admin",
        "assign",
        "d1",
        "ok",
    )
    wait.until(lambda _: ["20", "h20", "d1 (0)"] in rows("groups"))
    assert rows("audit")[0][2:6] == ["admin:admin", "assign", "d1", "ok"]
    assert rows("events")[0][2:5] == ["20", "hot-plug", "0"]
    browser.save_screenshot(str(tmp_path / "pool-page.png"))

    # Move d0 onto h20 and unassign d1, through the forms.
    Select(browser.find_element(By.ID, "assign-device")).select_by_visible_text("d0 (VLAN 10)")
    Select(browser.find_element(By.ID, "assign-vlan")).select_by_visible_text("h20 (VLAN 20)")
    browser.find_element(By.ID, "assign-submit").click()
    assert message("d0") == "Assigned d0 to VLAN 20 slot 1."
    Select(browser.find_element(By.ID, "unassign-device")).select_by_visible_text("d1 (VLAN 20)")
    browser.find_element(By.ID, "unassign-submit").click()
    assert message("Unassigned") == "Unassigned d1."
    assert [(d["name"], d["vlan"], d["slot"]) for d in c.call("GET", "/api/devices")] == [
        ("d0", 20, 1),
        ("d1", None, None),
    ]
    kinds = [(e["vlan"], e["kind"]) for e in c.call("GET", "/api/events")]
    assert kinds[-3:] == [(10, "hot-remove"), (20, "hot-plug"), (20, "hot-remove")]

    # A host token sees its own group and no forms.
    secret = c.call("POST", "/api/tokens", {"name": "h20", "role": "host", "vlan": 20})["token"]
    browser.get(pool.url + "/")
    browser.find_element(By.ID, "token").send_keys(secret)
    browser.find_element(By.ID, "login").click()
    message("Logged in.")
    assert [r[1] for r in rows("devices")] == ["d0"]
    assert not browser.find_element(By.ID, "admin-forms").is_displayed()
    assert not browser.find_element(By.ID, "audit-section").is_displayed()
