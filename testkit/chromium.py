"""Headless Chromium driven through the DevTools protocol over ``--remote-debugging-pipe``
(JSON messages, NUL-terminated, on file descriptors 3 and 4): no websocket library, no network
port. Enough for the report tests: load a file URL at a viewport width, evaluate JavaScript,
take a screenshot, and record every request the page made."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic", "--hide-scrollbars", "--mute-audio",
    "--remote-debugging-pipe",
]


class ChromiumError(RuntimeError):
    pass


class Chromium:
    def __init__(self, profile: Path, timeout: float = 60.0):
        exe = shutil.which("chromium")
        if exe is None:
            raise ChromiumError("chromium is not installed: run `make test` (installs Debian's chromium)")
        self.timeout = timeout
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()

        def fds():  # the child reads commands on fd 3 and writes answers on fd 4 (dup2: inheritable)
            r, w = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)

        # close_fds=False: closing would also close 3 and 4; the pipes' own fds are close-on-exec
        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            close_fds=False, preexec_fn=fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._out = os.fdopen(to_chrome_w, "wb", buffering=0)
        self._in = os.fdopen(from_chrome_r, "rb", buffering=0)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []
        self.session = None
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable")
        self.call("Network.enable")

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise ChromiumError("no answer from chromium in time")
            chunk = self._in.read(65536)
            if not chunk:
                raise ChromiumError(f"chromium exited (code {self.proc.poll()})")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, **params) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if self.session and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self.session
        self._out.write(json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise ChromiumError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            if "method" in answer:
                self.events.append(answer)

    def wait_for(self, event: str) -> dict:
        deadline = time.monotonic() + self.timeout
        for e in self.events:
            if e["method"] == event:
                self.events.remove(e)
                return e
        while True:
            e = self._read_message(deadline)
            if e.get("method") == event:
                return e
            if "method" in e:
                self.events.append(e)

    def load(self, url: str, width: int, height: int = 900) -> None:
        """Open ``url`` at a ``width`` px wide viewport and wait for its load event."""
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        self.events = [e for e in self.events if e["method"] != "Page.loadEventFired"]
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise ChromiumError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def requested_urls(self) -> list[str]:
        """Every URL a request was made for since the browser started (documents included)."""
        return [e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"]

    def screenshot(self, path: Path, full_page: bool = True) -> Path:
        params: dict = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            width = self.evaluate("window.innerWidth")
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": width, "height": size["height"], "scale": 1})
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", **params)["data"]))
        return path

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (ChromiumError, OSError, ValueError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
        self._in.close()
