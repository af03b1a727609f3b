# SPDX-License-Identifier: Apache-2.0
"""Headless Chromium driven over the DevTools protocol, for the flame graph
tests and the benchmark. Uses Debian's chromium and python3-websocket only.

The browser runs with a fresh profile directory and its network features
off; every request a page makes is recorded so that a test can assert that
a page loads nothing but itself."""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

try:
    import websocket  # python3-websocket
except ImportError:  # reported by find_chromium()
    websocket = None

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
    "--disable-extensions", "--disable-default-apps", "--disable-domain-reliability",
    "--disable-client-side-phishing-detection", "--no-default-browser-check",
    "--disable-breakpad", "--metrics-recording-only", "--mute-audio", "--hide-scrollbars",
    "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,"
    "CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions",
    "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
]


def find_chromium():
    """The browser binary, or None with a reason."""
    if websocket is None:
        return None, "python3-websocket is not installed (scripts/install-deps.sh installs it)"
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path, ""
    return None, "chromium is not installed (scripts/install-deps.sh installs it)"


class Browser:
    def __init__(self, width=1400, height=900, timeout=60):
        path, why = find_chromium()
        if not path:
            raise RuntimeError(why)
        self.profile = tempfile.mkdtemp(prefix="ember-chromium-")
        self.proc = subprocess.Popen(
            [path, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.timeout = timeout
        self.next_id = 0
        self.events = []
        self.ws = None
        try:
            port = self._wait_port()
            targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
            page = next(t for t in targets if t.get("type") == "page")
            self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=timeout,
                                                  suppress_origin=True)
            for domain in ("Page", "Runtime", "Log", "Network"):
                self.call(f"{domain}.enable")
            self.call("Emulation.setDeviceMetricsOverride",
                      width=width, height=height, deviceScaleFactor=1, mobile=False)
        except Exception:
            self.close()
            raise

    def _wait_port(self):
        f = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + self.timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode}")
            try:
                with open(f) as fh:
                    port = fh.readline().strip()
                if port:
                    return int(port)
            except (FileNotFoundError, ValueError):
                pass
            time.sleep(0.1)
        raise RuntimeError("chromium did not open its DevTools port")

    def call(self, method, **params):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def evaluate(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def open(self, path, ready="window.emberFlame && window.emberFlame.ready"):
        """Loads a file and waits until the expression `ready` is true. Returns seconds taken."""
        url = "file://" + os.path.abspath(path)
        start = time.time()
        self.call("Page.navigate", url=url)
        deadline = start + self.timeout
        while time.time() < deadline:
            try:
                if self.evaluate(f"!!({ready}) && location.href === {json.dumps(url)}"):
                    return time.time() - start
            except RuntimeError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{path} did not become ready in {self.timeout} s")

    def click(self, x, y):
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1 if kind != "mouseMoved" else 0)

    def hover(self, x, y):
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)

    def screenshot(self, out_path):
        r = self.call("Page.captureScreenshot", format="png")
        with open(out_path, "wb") as f:
            f.write(base64.b64decode(r["data"]))
        return out_path

    def drain(self):
        """Reads the events that arrived since the last call."""
        self.ws.settimeout(0.2)
        try:
            while True:
                msg = json.loads(self.ws.recv())
                if "method" in msg:
                    self.events.append(msg)
        except Exception:
            pass
        finally:
            self.ws.settimeout(self.timeout)

    def errors(self):
        """Console errors, uncaught exceptions and error log entries seen so far."""
        self.drain()
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console: " + json.dumps(p.get("args", []))[:500])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log: " + p["entry"].get("text", "")[:500])
        return out

    def requests(self):
        """URLs of every request pages made."""
        self.drain()
        return [e["params"]["request"]["url"] for e in self.events
                if e["method"] == "Network.requestWillBeSent"]

    def close(self):
        if self.ws:
            try:
                self.ws.close()
            except Exception:
                pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
