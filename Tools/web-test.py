"""Drives the web chat of two running lanchat nodes with headless Chromium (see web-test.sh).

Every wait is a WebDriverWait on a DOM condition with a deadline; no step sleeps blindly.
Prints one line per check and `web: N passed, M failed`; exits 1 on any failure.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request
import zlib

os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager download a browser
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

WAIT = 30  # seconds, for anything that crosses the network between the nodes

passed = 0
failed = 0


def png(width, height, colour):
    """A PNG of a diagonal gradient over `colour` (RGB), written by hand: no imaging library."""
    rows = bytearray()
    for y in range(height):
        rows.append(0)
        for x in range(width):
            t = (x + y) / (width + height)
            rows += bytes(int(c * (0.45 + 0.55 * t)) for c in colour)
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(rows))) + chunk(b"IEND", b"")


DRIVERS = {}  # name -> driver, screenshotted when a check fails
ARTIFACTS = None


def gif(frames, size=48):
    """An animated GIF, one colour per frame. Its LZW data sends a clear code before every pixel,
    so the code width stays 3 bits: valid, if not small."""
    palette = b"".join(bytes(c) for c in frames) + b"\x00\x00\x00" * (4 - len(frames))
    out = bytearray(b"GIF89a" + struct.pack("<HHBBB", size, size, 0xF1, 0, 0) + palette)
    out += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"  # loop forever
    for index in range(len(frames)):
        out += b"\x21\xf9\x04\x04\x14\x00\x00\x00"  # 0.2 s per frame
        out += b"\x2c" + struct.pack("<HHHHB", 0, 0, size, size, 0) + b"\x02"
        bits, count, data = 0, 0, bytearray()
        for code in [4, index] * (size * size) + [5]:
            bits |= code << count
            count += 3
            while count >= 8:
                data.append(bits & 0xFF)
                bits >>= 8
                count -= 8
        if count:
            data.append(bits & 0xFF)
        for i in range(0, len(data), 255):
            block = data[i:i + 255]
            out += bytes([len(block)]) + block
        out += b"\x00"
    return bytes(out + b"\x3b")


def check(name):
    """Runs the decorated function at once as one check and counts the result."""
    def run(fn):
        global passed, failed
        try:
            fn()
            passed += 1
            print(f"ok    {name}", flush=True)
        except Exception as error:  # noqa: BLE001 - any failure is a failed check
            failed += 1
            print(f"FAIL  {name}: {type(error).__name__}: {error}".rstrip(), flush=True)
            traceback.print_exc(limit=3, file=sys.stderr)
            for who, driver in DRIVERS.items():
                try:
                    driver.save_screenshot(os.path.join(ARTIFACTS, f"failed-{who}-" + name.replace(" ", "-")[:50] + ".png"))
                except Exception:  # noqa: BLE001
                    pass
        return fn
    return run


def browser(profile_dir, width=1100, height=760):
    options = Options()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--user-data-dir={profile_dir}", f"--window-size={width},{height}", "--no-first-run",
                     "--disable-extensions", "--disable-background-networking", "--lang=en-US",
                     "--force-prefers-reduced-motion"):
        options.add_argument(argument)
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(service=service, options=options)


def login_url(lanchat, data):
    return subprocess.run([lanchat, "open", "--data", data], check=True, capture_output=True, text=True).stdout.strip()


def user_id(lanchat, data):
    return subprocess.run([lanchat, "whoami", "--data", data], check=True, capture_output=True, text=True).stdout.strip()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def wait(driver, condition, seconds=WAIT, message=""):
    return WebDriverWait(driver, seconds, poll_frequency=0.1).until(condition, message)


def js(driver, script, *args):
    return driver.execute_script(script, *args)


def message_texts(driver):
    return js(driver, "return Array.from(document.querySelectorAll('#messages .text')).map(e => e.textContent)")


def message_count(driver):
    return js(driver, "return document.querySelectorAll('#messages .text').length")


def loaded_photos(driver):
    """Photos in the open conversation that the browser has decoded."""
    return js(driver, "return Array.from(document.querySelectorAll('#messages img.photo'))"
                      ".filter(i => i.complete && i.naturalWidth > 0).map(i => i.getAttribute('src'))")


PUSH_ALPHABET = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"


def push_id(millis, n):
    """A push id (Firebase's 20 characters: 8 of time, 12 more) for message `n` sent at `millis`."""
    head = "".join(PUSH_ALPHABET[(millis >> (6 * i)) & 63] for i in reversed(range(8)))
    tail = "".join(PUSH_ALPHABET[(n >> (6 * i)) & 63] for i in reversed(range(12)))
    return head + tail


class NodeAPI:
    """The local API of a running node, with its token (for writes made outside the pages)."""

    def __init__(self, data):
        self.data_json = os.path.join(data, "node.json")
        with open(self.data_json) as f:
            self.origin = "http://" + json.load(f)["api"]
        with open(os.path.join(data, "api.token")) as f:
            self.token = f.read().strip()

    def peak_memory_mb(self):
        """The node process's peak resident memory (VmHWM), in MB."""
        with open(self.data_json) as f:
            pid = json.load(f)["pid"]
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.origin + path, data=data, method=method,
                                         headers={"Authorization": "Bearer " + self.token, "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read() or b"null")


def until(condition, seconds, message):
    """Polls `condition` every 0.1 s until it is true, or fails after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out: " + message)
        time.sleep(0.1)


HISTORY = 10_000  # messages in the long conversation


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lanchat", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--artifacts", required=True)
    args = parser.parse_args()
    global ARTIFACTS
    artifacts = ARTIFACTS = args.artifacts
    os.makedirs(artifacts, exist_ok=True)
    data_a, data_b = os.path.join(args.work, "a"), os.path.join(args.work, "b")
    data_c = os.path.join(args.work, "c")
    uid_a, uid_b = user_id(args.lanchat, data_a), user_id(args.lanchat, data_b)
    direct = "_".join(sorted([uid_a, uid_b]))
    photo_path = os.path.join(args.work, "photo.png")
    with open(photo_path, "wb") as f:
        f.write(png(160, 120, (40, 120, 230)))
    picture_path = os.path.join(args.work, "me.png")
    with open(picture_path, "wb") as f:
        f.write(png(96, 96, (230, 110, 40)))

    profiles = tempfile.mkdtemp(prefix="lanchat-web-")
    node_c = {}  # C's node process, started by the check that needs it
    a = browser(os.path.join(profiles, "a"))
    b = browser(os.path.join(profiles, "b"))
    DRIVERS.update(A=a, B=b)
    try:
        url_a, url_b = login_url(args.lanchat, data_a), login_url(args.lanchat, data_b)
        origin_a = url_a.split("/?")[0]

        @check("page and assets are served with their types, uncached")
        def _():
            for path, kind in (("/", "text/html"), ("/app.js", "text/javascript"), ("/app.css", "text/css")):
                with urllib.request.urlopen(origin_a + path) as response:
                    assert response.status == 200, path
                    assert response.headers["Content-Type"].startswith(kind), (path, response.headers["Content-Type"])
                    assert response.headers["Cache-Control"] == "no-cache", path
                    body = response.read().decode()
                    assert "http://" not in body and "https://" not in body, f"{path} refers to another site"

        @check("data needs a session: no cookie, no data")
        def _():
            try:
                urllib.request.urlopen(origin_a + "/.lanchat/status")
                raise AssertionError("status answered without credentials")
            except urllib.error.HTTPError as error:
                assert error.code == 401, error.code

        @check("login link signs the browser in and leaves the address bar")
        def _():
            for driver, url in ((a, url_a), (b, url_b)):
                driver.get(url)
                wait(driver, lambda d: d.find_element(By.ID, "app").is_displayed(), message="app shown")
                assert "login=" not in driver.current_url, driver.current_url
                assert "lanchat_session" not in js(driver, "return document.cookie"), "session cookie readable by scripts"
            js(b, "window.__notReloaded = true")

        @check("a login link works once")
        def _():
            opener = urllib.request.build_opener(NoRedirect)
            try:
                opener.open(url_a)
                raise AssertionError("no redirect")
            except urllib.error.HTTPError as error:
                assert error.code == 303, error.code
                assert error.headers["Location"] == "/#login-failed", error.headers["Location"]
                assert error.headers["Set-Cookie"] is None, "a used token gave a cookie"

        @check("every form control has a label")
        def _():
            unlabeled = js(a, "return Array.from(document.querySelectorAll('input, textarea, select'))"
                              ".filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')).map(e => e.id)")
            assert unlabeled == [], unlabeled
            assert a.find_element(By.ID, "messages").get_attribute("aria-live") == "polite"

        @check("B opens a conversation with A from search")
        def _():
            box = b.find_element(By.ID, "search-input")
            box.send_keys("alice")
            wait(b, lambda d: any("Alice Smith" in e.text for e in d.find_elements(By.CSS_SELECTOR, "#search-results button")),
                 message="Alice in B's results")
            b.find_element(By.CSS_SELECTOR, f"#search-results button[data-uid='{uid_a}']").click()
            wait(b, lambda d: d.find_element(By.ID, "conversation-title").text == "Alice Smith", message="title")

        @check("A finds B by part of the name, accent-insensitively, as they type")
        def _():
            box = a.find_element(By.ID, "search-input")
            box.click()
            box.send_keys("bich")
            wait(a, lambda d: any("Bùi Thị Bích" in e.text for e in d.find_elements(By.CSS_SELECTOR, "#search-results button")),
                 message="Bích in A's results")
            a.save_screenshot(os.path.join(artifacts, "search.png"))

        @check("A opens the conversation with the keyboard")
        def _():
            box = a.find_element(By.ID, "search-input")
            box.send_keys(Keys.ARROW_DOWN)
            wait(a, lambda d: d.switch_to.active_element.get_attribute("data-uid") == uid_b, message="result focused")
            a.switch_to.active_element.send_keys(Keys.ENTER)
            wait(a, lambda d: d.find_element(By.ID, "conversation").is_displayed(), message="conversation shown")
            assert a.find_element(By.ID, "conversation-title").text == "Bùi Thị Bích"
            assert js(a, "return decodeURIComponent(location.hash.slice(3))") == direct
            wait(a, lambda d: d.switch_to.active_element.get_attribute("id") == "composer-text", message="composer focused")

        @check("A sends a text with Enter")
        def _():
            a.switch_to.active_element.send_keys("Xin chào Bích!")
            a.switch_to.active_element.send_keys(Keys.ENTER)
            wait(a, lambda d: "Xin chào Bích!" in message_texts(d), message="text on A")
            assert a.find_element(By.ID, "composer-text").get_attribute("value") == ""

        @check("A sends a photo with the file picker")
        def _():
            a.find_element(By.ID, "photo-input").send_keys(photo_path)
            wait(a, lambda d: len(loaded_photos(d)) == 1, message="photo on A")
            src = loaded_photos(a)[0]
            assert src.startswith("/v0/b/lanchat/o/images%2F") and "alt=media" in src, src

        @check("B's open conversation shows the text and the photo live, without reloading")
        def _():
            wait(b, lambda d: "Xin chào Bích!" in message_texts(d), message="text on B")
            wait(b, lambda d: len(loaded_photos(d)) == 1, message="photo on B")
            assert js(b, "return window.__notReloaded === true"), "B's page was reloaded"
            sender = js(b, "return document.querySelector('#messages li .sender').textContent")
            assert sender == "Alice Smith", sender
            # newest at the bottom: the photo came after the text
            order = js(b, "return Array.from(document.querySelectorAll('#messages li')).map(li => li.querySelector('img.photo') ? 'photo' : li.querySelector('.text').textContent)")
            assert order == ["Xin chào Bích!", "photo"], order
            b.save_screenshot(os.path.join(artifacts, "conversation.png"))

        @check("B has read A's messages: A's page shows both seen (two ticks) and B online")
        def _():
            wait(a, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#messages li.mine .ticks.seen")) == 2, message="seen ticks on A")
            assert js(a, "return document.querySelector('#messages li.mine .ticks.seen').textContent") == "\u2713\u2713"
            wait(a, lambda d: "online" in d.find_element(By.ID, "conversation-presence").get_attribute("class"), message="B online")
            assert a.find_element(By.ID, "presence-text").text == "online"

        @check("A types: B's page shows 'Alice Smith is typing...' at once; it clears when A stops")
        def _():
            box = a.find_element(By.ID, "composer-text")
            js(b, "window.__typingSeen = null; const line = document.getElementById('typing-line');"
                  "new MutationObserver(() => { if (line.textContent && window.__typingSeen === null) window.__typingSeen = performance.now(); })"
                  ".observe(line, {childList: true, characterData: true, subtree: true});")
            start = time.monotonic()
            box.send_keys("Đang gõ")
            wait(b, lambda d: d.find_element(By.ID, "typing-line").text == "Alice Smith is typing...", message="typing line on B")
            print(f"     typing line on B {1000 * (time.monotonic() - start):.0f} ms after the keystroke (through two WebDriver round trips)")
            b.save_screenshot(os.path.join(artifacts, "typing.png"))
            box.send_keys(Keys.CONTROL, "a")
            box.send_keys(Keys.DELETE)
            wait(b, lambda d: d.find_element(By.ID, "typing-line").text == "", seconds=10, message="typing line cleared")
            out = subprocess.run([args.lanchat, "get", "--data", data_b, f"/conversations/{direct}/typingIndicator"],
                                 check=True, capture_output=True, text=True).stdout.strip()
            assert out == "null", f"a typing flag became a record: {out}"

        @check("stored message: sender is the node's user, photo under gs://lanchat/images/")
        def _():
            out = subprocess.run([args.lanchat, "get", "--data", data_b, f"/conversations/{direct}/messages"],
                                 check=True, capture_output=True, text=True).stdout
            messages = list(json.loads(out).values())
            assert all(m["senderId"] == uid_a for m in messages), messages
            assert all(isinstance(m["date"], (int, float)) for m in messages), messages
            photos = [m["photoURL"] for m in messages if "photoURL" in m]
            assert len(photos) == 1 and photos[0].startswith("gs://lanchat/images/") and photos[0].endswith(".png"), photos

        @check("A back at the list sees B's reply as unread")
        def _():
            a.find_element(By.ID, "back-button").click() if a.find_element(By.ID, "back-button").is_displayed() else js(a, "location.hash = ''")
            wait(a, lambda d: d.find_element(By.ID, "welcome").is_displayed(), message="list")
            box = b.find_element(By.ID, "composer-text")
            box.send_keys("Chào Alice, nice photo")
            b.find_element(By.ID, "send-button").click()
            selector = f"#conversation-list li[data-id='{direct}'] .badge"
            wait(a, lambda d: [e.text for e in d.find_elements(By.CSS_SELECTOR, selector)] == ["1"], message="unread badge")
            item = a.find_element(By.CSS_SELECTOR, f"#conversation-list li[data-id='{direct}'] .item-sub").text
            assert "Chào Alice" in item, item
            a.save_screenshot(os.path.join(artifacts, "conversations.png"))

        @check("the tab's title carries the unread count; notifications wait to be asked for")
        def _():
            wait(a, lambda d: d.title.startswith("(1) "), message="title with the unread count")
            permission = js(a, "return 'Notification' in window ? Notification.permission : 'none'")
            shown = a.find_element(By.ID, "notify-button").is_displayed()
            assert shown == (permission == "default"), (permission, shown)

        @check("opening the conversation clears the unread count")
        def _():
            a.find_element(By.CSS_SELECTOR, f"#conversation-list li[data-id='{direct}'] button").click()
            wait(a, lambda d: "Chào Alice, nice photo" in message_texts(d), message="reply shown")
            wait(a, lambda d: not d.find_elements(By.CSS_SELECTOR, "#conversation-list .badge"), message="badge gone")
            wait(a, lambda d: not d.title.startswith("("), message="title without a count")

        @check("A edits the profile: name and a round picture")
        def _():
            a.find_element(By.ID, "profile-button").click()
            wait(a, lambda d: d.find_element(By.ID, "profile").is_displayed(), message="profile shown")
            last = a.find_element(By.ID, "last-name")
            last.clear()
            last.send_keys("Smith-Nguyễn")
            a.find_element(By.CSS_SELECTOR, "#name-form button[type=submit]").click()
            wait(a, lambda d: d.find_element(By.ID, "profile-status").text == "Name saved.", message="saved")
            wait(a, lambda d: d.find_element(By.ID, "me-name").text == "Alice Smith-Nguyễn", message="top bar name")
            a.find_element(By.ID, "picture-input").send_keys(picture_path)
            wait(a, lambda d: js(d, "const i = document.querySelector('#profile-avatar img'); return !!i && i.complete && i.naturalWidth > 0"),
                 message="picture shown")
            radius = js(a, "return getComputedStyle(document.getElementById('profile-avatar')).borderRadius")
            assert radius == "50%", radius
            a.save_screenshot(os.path.join(artifacts, "profile.png"))
            out = subprocess.run([args.lanchat, "get", "--data", data_a, f"/users/{uid_a}"], check=True, capture_output=True, text=True).stdout
            profile = json.loads(out)
            assert profile["last_name"] == "Smith-Nguyễn" and profile["picture"] == f"images/{uid_a}_profile_picture.png", profile

        @check("B sees A's new name and picture in search and in the conversation list")
        def _():
            box = b.find_element(By.ID, "search-input")
            box.clear()
            box.send_keys("nguyen")
            selector = f"#search-results button[data-uid='{uid_a}']"
            wait(b, lambda d: any("Alice Smith-Nguyễn" in e.text for e in d.find_elements(By.CSS_SELECTOR, selector)), message="new name")
            wait(b, lambda d: js(d, "const i = document.querySelector(arguments[0] + ' img'); return !!i && i.complete && i.naturalWidth > 0", selector),
                 message="picture in results")
            box.send_keys(Keys.ESCAPE)
            item = f"#conversation-list li[data-id='{direct}']"
            wait(b, lambda d: d.find_element(By.CSS_SELECTOR, item + " .item-title").text == "Alice Smith-Nguyễn", message="renamed in the list")
            wait(b, lambda d: js(d, "const i = document.querySelector(arguments[0] + ' .avatar img'); return !!i && i.naturalWidth > 0", item),
                 message="picture in the list")

        @check("B drops an animated GIF onto the conversation; both pages show it")
        def _():
            data = list(gif([(230, 40, 40), (40, 160, 60), (40, 80, 230)]))
            js(b, """
                const file = new File([new Uint8Array(arguments[0])], 'wave.gif', {type: 'image/gif'});
                const transfer = new DataTransfer();
                transfer.items.add(file);
                const pane = document.getElementById('conversation');
                for (const type of ['dragenter', 'dragover', 'drop'])
                    pane.dispatchEvent(new DragEvent(type, {dataTransfer: transfer, bubbles: true, cancelable: true}));
            """, data)
            wait(b, lambda d: len(loaded_photos(d)) == 2 and ".gif" in loaded_photos(d)[1], message="GIF on B")
            assert not b.find_element(By.ID, "drop-hint").is_displayed()
            js(a, "location.hash = '#c/' + encodeURIComponent(arguments[0])", direct)
            wait(a, lambda d: len(loaded_photos(d)) == 2 and ".gif" in loaded_photos(d)[1], message="GIF on A")

        @check("a narrow window shows one pane at a time")
        def _():
            b.set_window_size(400, 760)
            wait(b, lambda d: d.find_element(By.ID, "conversation").is_displayed() and not d.find_element(By.ID, "sidebar").is_displayed(),
                 message="conversation only")
            b.save_screenshot(os.path.join(artifacts, "conversation-narrow.png"))
            b.find_element(By.ID, "back-button").click()
            wait(b, lambda d: d.find_element(By.ID, "sidebar").is_displayed() and not d.find_element(By.ID, "main").is_displayed(),
                 message="list only")
            wait(b, lambda d: d.switch_to.active_element.get_attribute("class") == "conversation-item", message="focus back on the item")
            b.save_screenshot(os.path.join(artifacts, "conversations-narrow.png"))
            width = js(b, "return document.documentElement.scrollWidth")
            assert width <= 400, f"page is {width}px wide in a 400px window"

        # ---- A long conversation: 10,000 messages from B, written in ten updates through B's API.
        team = "team"
        api_a, api_b = NodeAPI(data_a), NodeAPI(data_b)
        base = int(time.time() * 1000) - 400 * 24 * 3600 * 1000  # more than a year ago, a minute apart
        keys = [push_id(base + i * 60_000, i) for i in range(HISTORY)]
        texts = [f"History message {i + 1:05d}" for i in range(HISTORY)]

        @check(f"B writes a conversation of {HISTORY:,} messages; A's node has it")
        def _():
            started = time.monotonic()
            api_b.call("PUT", f"/conversations/{team}/meta.json", {"title": "Team history", "members": {uid_a: True, uid_b: True}})
            for start in range(0, HISTORY, 1000):
                api_b.call("PATCH", f"/conversations/{team}/messages.json", {
                    keys[i]: {"senderId": uid_b, "senderName": "Bùi Thị Bích", "date": base + i * 60_000, "text": texts[i]}
                    for i in range(start, min(start + 1000, HISTORY))})
            written = time.monotonic() - started
            until(lambda: (api_a.call("GET", "/.lanchat/conversations").get(team) or {}).get("lastKey") == keys[-1], 120,
                  "the history on A's node")
            print(f"      {HISTORY:,} messages written on B in {written:.1f} s, on A after {time.monotonic() - started:.1f} s", flush=True)

        @check("A's conversation list shows summaries: title, last message, unread count from the node")
        def _():
            js(a, "location.hash = ''")
            item = f"#conversation-list li[data-id='{team}']"
            wait(a, lambda d: [e.text for e in d.find_elements(By.CSS_SELECTOR, item + " .badge")] == ["99+"], message="unread badge 99+")
            assert a.find_element(By.CSS_SELECTOR, item + " .item-title").text == "Team history"
            assert a.find_element(By.CSS_SELECTOR, item + " .item-sub").text == texts[-1]
            summary = api_a.call("GET", "/.lanchat/conversations")[team]
            assert summary["unread"] == 100 and summary["last"]["text"] == texts[-1], summary
            # The page never reads the conversations' messages to make the list.
            fetched = js(a, "return performance.getEntriesByType('resource').map(e => e.name)")
            assert not [u for u in fetched if "/conversations.json" in u], fetched
            a.save_screenshot(os.path.join(artifacts, "conversations-long.png"))

        @check("the page loads with the long conversation listed quickly")
        def _():
            started = time.monotonic()
            a.get(origin_a + "/")
            wait(a, lambda d: d.find_elements(By.CSS_SELECTOR, f"#conversation-list li[data-id='{team}'] .badge"), message="list")
            print(f"      conversation list shown {1000 * (time.monotonic() - started):.0f} ms after loading the page", flush=True)

        @check(f"A opens the {HISTORY:,}-message conversation: the last messages first, marked read")
        def _():
            started = time.monotonic()
            js(a, "location.hash = '#c/' + encodeURIComponent(arguments[0])", team)
            wait(a, lambda d: (message_texts(d) or [""])[-1] == texts[-1], message="the last message shown")
            shown = 1000 * (time.monotonic() - started)
            in_page = js(a, "return window.__lanchatFirstMessagesMs")
            print(f"      time to first messages shown, first open: {shown:.0f} ms (in the page: {in_page:.0f} ms from opening to the first window)", flush=True)
            assert message_texts(a) == texts[-50:], message_texts(a)[:3]
            at_bottom = js(a, "const l = document.getElementById('messages'); return l.scrollHeight - l.scrollTop - l.clientHeight < 2")
            assert at_bottom, "not scrolled to the newest message"
            wait(a, lambda d: not d.find_elements(By.CSS_SELECTOR, f"#conversation-list li[data-id='{team}'] .badge"), message="badge gone")
            until(lambda: api_a.call("GET", "/.lanchat/conversations")[team]["unread"] == 0, WAIT, "the read mark on A's node")
            assert api_a.call("GET", "/.lanchat/conversations")[team]["readKey"] == keys[-1]
            a.save_screenshot(os.path.join(artifacts, "conversation-long.png"))

        @check("opened again, the conversation shows its last messages as quickly (the node's order index is kept)")
        def _():
            js(a, "location.hash = ''")
            wait(a, lambda d: d.find_element(By.ID, "welcome").is_displayed(), message="list")
            started = time.monotonic()
            js(a, "location.hash = '#c/' + encodeURIComponent(arguments[0])", team)
            wait(a, lambda d: (message_texts(d) or [""])[-1] == texts[-1] and message_count(d) == 50, message="the last messages shown again")
            print(f"      time to first messages shown, opened again: {1000 * (time.monotonic() - started):.0f} ms", flush=True)

        @check("scrolling up loads older messages, page by page, until the first")
        def _():
            started = time.monotonic()
            scrolls = 0
            deadline = time.monotonic() + 180
            while js(a, "return document.getElementById('messages').dataset.history") != "complete":
                before = message_count(a)
                js(a, "document.getElementById('messages').scrollTop = 0")
                scrolls += 1
                wait(a, lambda d: message_count(d) > before or js(d, "return document.getElementById('messages').dataset.history") == "complete",
                     message=f"older messages after {before}")
                # What the reader was looking at stays in view: the list grew above it.
                assert js(a, "return document.getElementById('messages').scrollTop") > 0 or message_count(a) == before
                assert time.monotonic() < deadline, "scrolling back took too long"
            elapsed = time.monotonic() - started
            shown = message_texts(a)
            assert shown == texts, (len(shown), shown[:2], shown[-2:])
            print(f"      scrolled back through {HISTORY:,} messages in {elapsed:.1f} s ({scrolls} scrolls)", flush=True)
            js(a, "document.getElementById('messages').scrollTop = 0")
            a.save_screenshot(os.path.join(artifacts, "conversation-long-start.png"))

        @check("a new message arrives live at the bottom, and the list puts its conversation first")
        def _():
            js(a, "const l = document.getElementById('messages'); l.scrollTop = l.scrollHeight")
            api_b.call("POST", f"/conversations/{team}/messages.json",
                       {"senderId": uid_b, "senderName": "Bùi Thị Bích", "date": {".sv": "timestamp"}, "text": "Live after the history"})
            wait(a, lambda d: (message_texts(d) or [""])[-1] == "Live after the history", message="live message")
            assert message_texts(a)[:-1] == texts, "older messages lost when the new one came"
            wait(a, lambda d: d.find_element(By.CSS_SELECTOR, "#conversation-list li:first-child").get_attribute("data-id") == team,
                 message="conversation first in the list")
            assert not a.find_elements(By.CSS_SELECTOR, f"#conversation-list li[data-id='{team}'] .badge"), "an open conversation shows unread"
            print(f"      node A's peak memory (VmHWM) over the whole test: {api_a.peak_memory_mb():.0f} MB", flush=True)

        # ---- A private group: A makes it with B in the page; C's node takes its records, unread.
        group = {}

        def records(api):
            return api.call("GET", "/.lanchat/status")["records"]

        def synced(api):
            """Polls until `api`'s node holds every record A's node holds."""
            until(lambda: records(api) >= records(api_a), WAIT, "records from A")

        def list_ids(driver):
            return js(driver, "return Array.from(document.querySelectorAll('#conversation-list li')).map(li => li.dataset.id)")

        @check("A creates a private group with B from 'New group' and sends a message")
        def _():
            a.set_window_size(1100, 760)
            js(a, "location.hash = ''")
            a.find_element(By.ID, "new-group-button").click()
            wait(a, lambda d: d.find_element(By.ID, "group-pane").is_displayed(), message="the new-group form")
            a.find_element(By.ID, "group-title").send_keys("Weekend plans")
            a.find_element(By.ID, "group-search").send_keys("bich")
            wait(a, lambda d: d.find_elements(By.CSS_SELECTOR, f"#group-search-results button[data-uid='{uid_b}']"), message="B to pick")
            a.find_element(By.CSS_SELECTOR, f"#group-search-results button[data-uid='{uid_b}']").click()
            wait(a, lambda d: d.find_elements(By.CSS_SELECTOR, f"#group-chosen li[data-uid='{uid_b}']"), message="B chosen")
            a.save_screenshot(os.path.join(artifacts, "group-new.png"))
            a.find_element(By.ID, "group-create").click()
            wait(a, lambda d: js(d, "return decodeURIComponent(location.hash)").startswith("#c/g_"), message="the group opened")
            group["id"] = js(a, "return decodeURIComponent(location.hash.slice(3))")
            wait(a, lambda d: d.find_element(By.ID, "conversation-title").text == "Weekend plans", message="group title")
            box = a.find_element(By.ID, "composer-text")
            box.send_keys("Only for the two of us")
            box.send_keys(Keys.ENTER)
            wait(a, lambda d: (message_texts(d) or [""])[-1] == "Only for the two of us", message="sent in the group")
            mark = a.find_element(By.CSS_SELECTOR, f"#conversation-list li[data-id='{group['id']}'] .item-mark")
            assert mark.get_attribute("aria-label") == "private", mark.get_attribute("aria-label")

        @check("B's page lists the group with a lock and shows A's message")
        def _():
            gid = group["id"]
            b.set_window_size(1100, 760)
            js(b, "location.hash = ''")
            wait(b, lambda d: d.find_elements(By.CSS_SELECTOR, f"#conversation-list li[data-id='{gid}']"), message="the group on B")
            item = b.find_element(By.CSS_SELECTOR, f"#conversation-list li[data-id='{gid}']")
            wait(b, lambda d: "Weekend plans" in item.text, message="its title on B")
            assert item.find_element(By.CSS_SELECTOR, ".item-mark").get_attribute("aria-label") == "private"
            assert item.find_element(By.CSS_SELECTOR, ".item-mark").text == "\U0001F512"
            item.find_element(By.CSS_SELECTOR, "button").click()
            wait(b, lambda d: "Only for the two of us" in message_texts(d), message="the message on B")
            b.save_screenshot(os.path.join(artifacts, "group-member.png"))

        @check("C's node holds the group's records, but C's page does not list it and reads none of it")
        def _():
            gid = group["id"]
            node_c["node"] = subprocess.Popen(
                [args.lanchat, "run", "--data", data_c, "--listen", os.environ["WEB_TEST_C_LISTEN"], "--no-discovery",
                 "--peer", os.environ["WEB_TEST_A_LISTEN"], "--api", "127.0.0.1:0"],
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(args.work, "c.log"), "ab"))
            until(lambda: os.path.exists(os.path.join(data_c, "node.json")) and '"api"' in open(os.path.join(data_c, "node.json")).read(),
                  WAIT, "C's node started")
            api_c = NodeAPI(data_c)
            c = browser(os.path.join(profiles, "c"))
            DRIVERS["C"] = c
            c.get(login_url(args.lanchat, data_c))
            wait(c, lambda d: d.find_element(By.ID, "app").is_displayed(), message="C's app")
            synced(api_c)
            # The list is streamed: wait for it to show what C's node has (the team conversation).
            wait(c, lambda d: team in list_ids(d), message="C's list")
            assert gid not in list_ids(c), list_ids(c)
            assert gid not in api_c.call("GET", "/.lanchat/conversations")
            assert "Only for the two of us" not in json.dumps(api_c.call("GET", f"/conversations/{gid}.json"))
            try:
                api_c.call("GET", f"/.lanchat/groups/{gid}")
                raise AssertionError("C's node describes the group")
            except urllib.error.HTTPError as error:
                assert error.code == 404, error.code
            c.save_screenshot(os.path.join(artifacts, "group-non-member.png"))

        @check("A removes B in the members panel; B's page and node get nothing sent afterwards")
        def _():
            gid = group["id"]
            a.find_element(By.ID, "members-button").click()
            wait(a, lambda d: d.find_elements(By.CSS_SELECTOR, f"#member-list li[data-uid='{uid_b}'] .member-remove"), message="B in the panel")
            members = js(a, "return Array.from(document.querySelectorAll('#member-list li')).map(li => li.dataset.uid)")
            assert sorted(members) == sorted([uid_a, uid_b]), members
            assert a.find_element(By.ID, "leave-button").get_attribute("hidden") is not None, "the creator is offered to leave"
            a.save_screenshot(os.path.join(artifacts, "group-members.png"))
            a.find_element(By.CSS_SELECTOR, f"#member-list li[data-uid='{uid_b}'] .member-remove").click()
            wait(a, lambda d: not d.find_elements(By.CSS_SELECTOR, f"#member-list li[data-uid='{uid_b}']"), message="B gone from the panel")
            info = api_a.call("GET", f"/.lanchat/groups/{gid}")
            assert [m["uid"] for m in info["members"]] == [uid_a], info
            box = a.find_element(By.ID, "composer-text")
            box.send_keys("Sent after B was removed")
            box.send_keys(Keys.ENTER)
            wait(a, lambda d: (message_texts(d) or [""])[-1] == "Sent after B was removed", message="sent after the removal")
            synced(api_b)
            assert "Only for the two of us" in message_texts(b), message_texts(b)
            assert "Sent after B was removed" not in message_texts(b), message_texts(b)
            stored = json.dumps(api_b.call("GET", f"/conversations/{gid}.json"), ensure_ascii=False)
            assert "Only for the two of us" in stored and "Sent after B was removed" not in stored, stored[:300]
            # Opened afresh, B's page shows the same.
            js(b, "location.hash = ''")
            wait(b, lambda d: d.find_element(By.ID, "welcome").is_displayed(), message="B's list")
            js(b, "location.hash = arguments[0]", "#c/" + gid)
            wait(b, lambda d: "Only for the two of us" in message_texts(d), message="B's view of the group")
            assert "Sent after B was removed" not in message_texts(b), message_texts(b)
            b.save_screenshot(os.path.join(artifacts, "group-removed.png"))

        @check("no errors in the browsers' consoles")
        def _():
            problems = []
            for name, driver in DRIVERS.items():
                for entry in driver.get_log("browser"):
                    if entry.get("level") == "SEVERE" and "favicon" not in entry.get("message", ""):
                        problems.append(f"{name}: {entry['message']}")
            # Resources that answered 503 while chunks were still on their way are expected retries.
            problems = [p for p in problems if "503" not in p and "404" not in p]
            assert not problems, problems
    finally:
        if node_c.get("node"):
            node_c["node"].terminate()
            node_c["node"].wait(timeout=20)
        for driver in DRIVERS.values():
            try:
                driver.quit()
            except Exception:  # noqa: BLE001
                pass
        shutil.rmtree(profiles, ignore_errors=True)

    print(f"web: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
