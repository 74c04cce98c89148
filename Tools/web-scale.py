"""Times the web chat of a running node in headless Chromium, as a user opening it sees it: from
navigation (the login link of `lanchat open`) until the conversation list shows, then from a click
on the newest conversation until its last messages are on screen. Used by the scale benchmark's
figures (BENCHMARKS.md) against a node holding a year of chat.

Each wait polls the DOM with a deadline; nothing sleeps blindly. Every run uses a fresh browser
profile, so nothing is cached. The list's time runs from the page's navigation start (its
`performance.timeOrigin`), not from the call that asks the browser to navigate: a new profile's
browser sometimes sets itself up for one to five seconds before it starts, which is no part of
what the node or the web chat does. Prints one JSON object: the seconds of each run, and how long
the browser took before it started to navigate.

Usage: python web-scale.py --lanchat PATH --data DIR [--runs 3]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager download a browser
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

DEADLINE = 120  # seconds for each step, however large the store


def browser(profile_dir):
    options = Options()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--user-data-dir={profile_dir}", "--window-size=1100,760", "--no-first-run",
                     "--disable-extensions", "--disable-background-networking", "--lang=en-US"):
        options.add_argument(argument)
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(service=service, options=options)


def count(driver, selector):
    return driver.execute_script("return document.querySelectorAll(arguments[0]).length", selector)


def one_run(lanchat, data, profile):
    url = subprocess.run([lanchat, "open", "--data", data], check=True, capture_output=True, text=True).stdout.strip()
    driver = browser(profile)
    try:
        asked = time.time()
        driver.get(url)
        WebDriverWait(driver, DEADLINE, poll_frequency=0.02).until(
            lambda d: count(d, "#conversation-list li button") > 0, "conversation list shown")
        listed = time.time()
        navigation_start = driver.execute_script("return performance.timeOrigin") / 1000.0
        rows = driver.find_elements(By.CSS_SELECTOR, "#conversation-list li button")
        clicked = time.monotonic()
        rows[0].click()
        WebDriverWait(driver, DEADLINE, poll_frequency=0.02).until(
            lambda d: count(d, "#messages li[data-sender]") > 0, "messages shown")
        shown = time.monotonic()
        messages = count(driver, "#messages li[data-sender]")
        return {"list": listed - navigation_start, "browser_before_navigation": navigation_start - asked,
                "messages_after_click": shown - clicked, "messages_shown": messages, "conversations_shown": len(rows)}
    finally:
        driver.quit()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lanchat", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    profiles = tempfile.mkdtemp(prefix="lanchat-web-scale-")
    try:
        runs = [one_run(args.lanchat, args.data, os.path.join(profiles, str(i))) for i in range(args.runs)]
    finally:
        shutil.rmtree(profiles, ignore_errors=True)
    print(json.dumps({"runs": runs}))


if __name__ == "__main__":
    sys.exit(main())
