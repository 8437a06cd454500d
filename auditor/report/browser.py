"""A report as a person sees it in a real browser: headless Chromium driven over the DevTools protocol on a pipe
(`--remote-debugging-pipe`: JSON messages on file descriptors 3 and 4, no network port, no extra package).

Used by the tests and by the docs' page samples to measure a page at a phone's and a desktop's width, collect what
the console reports, and take screenshots. An audit never starts a browser.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")
# Flags of a quiet, private, offline browser (the machine has no network; background services would only fail).
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars")


def find_chromium() -> str | None:
    """The path of a Chromium-like browser on this machine, or None."""
    return next((path for name in CANDIDATES if (path := shutil.which(name))), None)


@dataclass
class PageView:
    """What a page looks like at one viewport: its scroll width and height, the console's errors, a screenshot."""

    width: int
    scroll_width: int
    scroll_height: int
    console_errors: list[str] = field(default_factory=list)
    screenshot: bytes = b""
    overflowing: list[str] = field(default_factory=list)  # elements wider than the viewport (tag.class: width)


class Chromium:
    """One headless Chromium process; `view(url, width)` opens a page at that viewport width."""

    def __init__(self, executable: str | None = None, timeout: float = 30.0) -> None:
        executable = executable or find_chromium()
        if executable is None:
            raise FileNotFoundError("no Chromium on this machine (Debian package `chromium`)")
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="auditor-chromium-")
        to_browser_r, self._to_browser = _high(*os.pipe())
        self._from_browser, from_browser_w = _high(*os.pipe())
        # the DevTools pipe: the browser reads fd 3 and writes fd 4 (moved there by the spawn, whatever this
        # process has open; the other standard streams go to /dev/null)
        self._pid = os.posix_spawn(
            executable, [executable, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={self._profile}",
                         "about:blank"], os.environ,
            file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                          (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                          (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                          (os.POSIX_SPAWN_DUP2, to_browser_r, 3), (os.POSIX_SPAWN_DUP2, from_browser_w, 4)])
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
        for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, sig)
            if self._reaped(wait):
                break
        singleton = self.singleton_folder()
        if singleton is not None:  # a browser stopped by a signal leaves it in the temporary folder
            shutil.rmtree(singleton, ignore_errors=True)
        shutil.rmtree(self._profile, ignore_errors=True)

    def singleton_folder(self) -> str | None:
        """The folder Chromium made for its singleton socket (the profile's `SingletonSocket` links into it), or
        None. (Pointing Chromium's TMPDIR into the profile instead would lengthen the socket's path past the
        108 bytes a Unix socket's name may have, under a long TMPDIR.)"""
        try:
            folder = os.path.dirname(os.readlink(os.path.join(self._profile, "SingletonSocket")))
        except OSError:
            return None
        return folder if os.path.basename(folder).startswith("org.chromium.") else None

    def _reaped(self, wait: float) -> bool:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                if os.waitpid(self._pid, os.WNOHANG)[0]:
                    return True
            except ChildProcessError:
                return True
            time.sleep(0.05)
        return False

    def _send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            self._events.append(reply)

    def _read(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _wait_for(self, method: str, session: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not any(e.get("method") == method and e.get("sessionId") == session for e in self._events):
            self._events.append(self._read(deadline))

    def view(self, url: str, width: int, *, height: int = 900, screenshot: bool = False,
             full_page: bool = False) -> PageView:
        """Open `url` in a fresh tab at `width` × `height` CSS pixels, wait for the load, and measure it."""
        target = self._send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self._send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        try:
            for domain in ("Page", "Runtime", "Log"):
                self._send(f"{domain}.enable", session=session)
            self._send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                              "deviceScaleFactor": 1, "mobile": width < 600},
                       session=session)
            self._events.clear()
            self._send("Page.navigate", {"url": url}, session=session)
            self._wait_for("Page.loadEventFired", session)
            measure = self._send("Runtime.evaluate", {"expression": _MEASURE, "returnByValue": True},
                                 session=session)["result"]["value"]
            image = b""
            if screenshot:
                params: dict[str, Any] = {"format": "png"}
                if full_page:
                    params.update(captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": width, "scale": 1,
                                                                     "height": min(measure["scrollHeight"], 16000)})
                image = base64.b64decode(self._send("Page.captureScreenshot", params, session=session)["data"])
            errors = [_console_text(e) for e in self._events if e.get("sessionId") == session and _is_error(e)]
            return PageView(width=width, scroll_width=measure["scrollWidth"], scroll_height=measure["scrollHeight"],
                            console_errors=errors, screenshot=image, overflowing=measure["overflowing"])
        finally:
            self._send("Target.closeTarget", {"targetId": target})


# Measured inside the page by the DevTools protocol (the report's own Content-Security-Policy forbids scripts: this
# is the browser's inspector, not page script). Elements whose right edge passes the viewport, outside any box
# that scrolls sideways, are listed.
_MEASURE = """(() => {
  const root = document.documentElement, width = root.clientWidth, out = [];
  const scrolls = (el) => {  // inside a box that scrolls or clips sideways: it cannot widen the page
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(p).overflowX)) return true;
    }
    return false;
  };
  for (const el of document.body.querySelectorAll('*')) {
    const box = el.getBoundingClientRect();
    if (box.right > width + 1 && !scrolls(el)) {
      out.push(el.tagName.toLowerCase() + (el.className && el.className.baseVal === undefined ? '.' + el.className
               : '') + ': ' + Math.round(box.right));
      if (out.length >= 20) break;
    }
  }
  return {scrollWidth: root.scrollWidth, scrollHeight: root.scrollHeight, overflowing: out};
})()"""


def _is_error(event: dict[str, Any]) -> bool:
    method, params = event.get("method"), event.get("params", {})
    if method == "Runtime.exceptionThrown":
        return True
    if method == "Runtime.consoleAPICalled":
        return params.get("type") in ("error", "assert")
    if method == "Log.entryAdded":
        return params.get("entry", {}).get("level") == "error"
    return False


def _console_text(event: dict[str, Any]) -> str:
    params = event.get("params", {})
    if event.get("method") == "Log.entryAdded":
        return params["entry"].get("text", "")
    if event.get("method") == "Runtime.exceptionThrown":
        return params.get("exceptionDetails", {}).get("text", "exception")
    return " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))


def _high(*fds: int) -> tuple[int, ...]:
    """The same pipe ends moved above 9, so that moving them to 3 and 4 in the child never overwrites one with the
    other."""
    import fcntl

    moved = tuple(fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds)
    for fd in fds:
        os.close(fd)
    return moved


def file_url(path: Path) -> str:
    return Path(path).resolve().as_uri()
