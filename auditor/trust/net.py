"""HTTP exchanges of the trust code (the TSA, OCSP responders, CRLs, issuers' certificates), bounded as a whole: one
deadline for connecting, sending and every read, a cap on the answer's size, and http:// or https:// only.

Why not the libraries' own `timeout`: urllib's, requests' and pyHanko's bound each socket operation, so a server
that answers one byte every few seconds is never cut off; and urllib's default opener also reads file://, ftp:// and
data: URLs, so a "TSA" at file:///path/to/a/fifo hangs forever and a local file is read as the TSA's reply.

`exchange` runs one request in a worker thread (name resolution included) and waits for it until the deadline at
most; then it shuts the connection's socket, so the worker ends as well. `fetchers` gives pyHanko's certificate
validator the same bounds, with one deadline for everything one validation fetches.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import socket
import threading
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Any
from urllib.parse import urlsplit

SCHEMES = ("http", "https")
MAX_REDIRECTS = 4  # a GET (a CRL, a certificate) may move to https or another host; a POST is never redirected
FETCH_SECONDS = 20  # everything one validation fetches (OCSP, CRLs, issuers' certificates), together
MAX_FETCH_BYTES = 16 << 20  # a CRL of a large CA is a few MB; an OCSP response or a certificate a few KB
_CHUNK = 1 << 16


class NetError(Exception):
    """An exchange that did not complete: a scheme other than http(s), no connection, no complete answer in time.
    One line, worded to follow the service's name ("cannot reach the TSA (…)")."""


class TooLarge(NetError):
    """The answer is larger than the cap."""


@dataclass(frozen=True)
class Reply:
    """A complete answer, whatever its HTTP status."""

    status: int
    reason: str
    headers: dict[str, str]  # names in lower case
    content: bytes

    def header(self, name: str) -> str:
        return self.headers.get(name.lower(), "")


def scheme_problem(url: str) -> str | None:
    """Why `url` is not one this module asks (in words, to follow "it is"); None for an http:// or https:// URL
    with a host."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "not a URL"
    if parts.scheme in SCHEMES:
        return None if parts.hostname else f"an {parts.scheme}:// URL without a host"
    if not parts.scheme or len(parts.scheme) == 1:  # a path (C: is a drive)
        return "a path, not an http:// or https:// URL"
    return f"{parts.scheme}:…, not http:// or https://"


def exchange(url: str, *, data: bytes | None = None, headers: Mapping[str, str] | None = None, seconds: float,
             max_bytes: int, deadline: float | None = None) -> Reply:
    """POST `data` to `url` (GET without `data`) and read the whole answer, all within `seconds` and before
    `deadline` (a `time.monotonic()` value) when given. NetError when that fails, TooLarge past `max_bytes`; any
    HTTP status is a Reply. A GET follows up to MAX_REDIRECTS redirects to http(s) URLs."""
    problem = scheme_problem(url)
    if problem is not None:
        raise NetError(f"its URL is {problem}")
    start = time.monotonic()
    until = start + seconds if deadline is None else min(start + seconds, deadline)
    if until <= start:
        raise NetError("no time left for it: the deadline has passed")
    call = _Call(until)
    worker = threading.Thread(target=call.run, args=(url, data, dict(headers or {}), max_bytes), daemon=True,
                              name="auditor-net")
    worker.start()
    worker.join(until - start)
    if worker.is_alive():
        call.expire()
        raise NetError(f"no complete answer within {_seconds(until - start)}")
    if call.error is not None:
        raise call.error
    if call.reply is None:  # the worker died without a word: nothing we can use
        raise NetError("no answer")
    return call.reply


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"


def _size(count: int) -> str:
    return f"{count >> 20} MiB" if count >= 1 << 20 and count % (1 << 20) == 0 else f"{count:,} bytes"


class _Call:
    """One exchange in its worker thread, and what the waiting thread needs to end it: the connections it opened."""

    def __init__(self, until: float) -> None:
        self.until = until
        self.reply: Reply | None = None
        self.error: NetError | None = None
        self._lock = threading.Lock()
        self._connections: list[http.client.HTTPConnection] = []
        self._expired = False

    def run(self, url: str, data: bytes | None, headers: dict[str, str], max_bytes: int) -> None:
        try:
            self.reply = self._exchange(url, data, headers, max_bytes)
        except NetError as exc:
            self.error = exc
        except Exception as exc:  # urllib, http.client, ssl, socket: one line
            reason = getattr(exc, "reason", None) or exc
            text = str(reason).strip().splitlines()[0] if str(reason).strip() else type(exc).__name__
            self.error = NetError(text[:200])

    def left(self) -> float:
        """The time left, for the next socket operation; NetError when there is none."""
        left = self.until - time.monotonic()
        if left <= 0 or self._expired:
            raise NetError("no complete answer in time")
        return left

    def connection(self, kind: type[http.client.HTTPConnection]) -> Callable[..., http.client.HTTPConnection]:
        """A factory of `kind` connections for urllib that keeps each one, so `expire` can shut its socket."""
        def make(host: str, **options: Any) -> http.client.HTTPConnection:
            made = kind(host, **options)
            with self._lock:
                self._connections.append(made)
                if self._expired:
                    raise NetError("no complete answer in time")
            return made
        return make

    def expire(self) -> None:
        """The deadline has passed: shut every socket, so a read blocked in the worker returns now."""
        with self._lock:
            self._expired = True
            sockets = [c.sock for c in self._connections if c.sock is not None]
        for sock in sockets:
            with contextlib.suppress(OSError):  # the TCP socket itself, under any TLS layer
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    def _settle(self) -> None:
        """Every socket's timeout is the time left, never more."""
        left = self.left()
        with self._lock:
            sockets = [c.sock for c in self._connections if c.sock is not None]
        for sock in sockets:
            sock.settimeout(left)

    def _exchange(self, url: str, data: bytes | None, headers: dict[str, str], max_bytes: int) -> Reply:
        opener = urllib.request.OpenerDirector()  # http(s) only: no file:, ftp: or data: handler
        for handler in (urllib.request.ProxyHandler(), _HttpHandler(self), _HttpsHandler(self), _Redirects(),
                        _KeepStatus(), urllib.request.HTTPErrorProcessor()):
            opener.add_handler(handler)
        request = urllib.request.Request(url, data=data, headers=headers, method="GET" if data is None else "POST")
        with opener.open(request, timeout=self.left()) as answer:
            length = answer.headers.get("Content-Length", "").strip()
            if length.isdigit() and int(length) > max_bytes:
                raise TooLarge(f"an answer larger than {_size(max_bytes)}")
            body = bytearray()
            while True:
                self._settle()
                chunk = answer.read(min(_CHUNK, max_bytes + 1 - len(body)))
                if not chunk:
                    break
                body += chunk
                if len(body) > max_bytes:
                    raise TooLarge(f"an answer larger than {_size(max_bytes)}")
            self.left()  # the last read may have ended with the deadline
            return Reply(int(answer.status), str(answer.reason),
                         {name.lower(): value for name, value in answer.headers.items()}, bytes(body))


class _HttpHandler(urllib.request.HTTPHandler):
    def __init__(self, call: _Call) -> None:
        super().__init__()
        self._call = call

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._call.connection(http.client.HTTPConnection), req)


class _HttpsHandler(urllib.request.HTTPSHandler):
    def __init__(self, call: _Call) -> None:
        super().__init__()
        self._call = call

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._call.connection(http.client.HTTPSConnection), req)


class _Redirects(urllib.request.HTTPRedirectHandler):
    """A GET follows a few redirects to http(s) URLs; a POST (a TSA or OCSP request) none: its status is the
    answer."""

    max_redirections = MAX_REDIRECTS

    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
                         headers: http.client.HTTPMessage, newurl: str) -> urllib.request.Request | None:
        if req.data is not None:
            return None
        problem = scheme_problem(newurl)
        if problem is not None:
            raise NetError(f"it redirected to {problem}")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class _KeepStatus(urllib.request.BaseHandler):
    """Any HTTP status is an answer for the caller to judge (urllib's default raises HTTPError)."""

    def http_error_default(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
                           hdrs: http.client.HTTPMessage) -> IO[bytes]:
        return fp


# --- pyHanko's fetchers ----------------------------------------------------------------------------------------------

def fetchers(seconds: float | None = None, *, max_bytes: int = MAX_FETCH_BYTES) -> Any:
    """A pyHanko fetcher backend (OCSP, CRLs, issuers' certificates) whose every request goes through `exchange`, all
    of them within `seconds` (default FETCH_SECONDS) of the first: a validation that fetches never hangs, and once
    the time is spent every further fetch fails at once, as an unreachable service's does (hard-fail: the validation
    fails; soft-fail: it goes on without that data)."""
    return _backend_class()(FETCH_SECONDS if seconds is None else seconds, max_bytes)


class _Clock:
    """The deadline shared by a backend's fetchers, started by the first request."""

    def __init__(self, seconds: float, max_bytes: int) -> None:
        self.seconds = seconds
        self.max_bytes = max_bytes
        self._deadline: float | None = None
        self._lock = threading.Lock()

    def deadline(self) -> float:
        with self._lock:
            if self._deadline is None:
                self._deadline = time.monotonic() + self.seconds
            return self._deadline


def _backend_class() -> Callable[[float, int], Any]:
    import requests
    from pyhanko_certvalidator.fetchers.api import Fetchers
    from pyhanko_certvalidator.fetchers.common_utils import FetchBudget
    from pyhanko_certvalidator.fetchers.requests_fetchers import RequestsFetcherBackend
    from pyhanko_certvalidator.fetchers.requests_fetchers.cert_fetch_client import RequestsCertificateFetcher
    from pyhanko_certvalidator.fetchers.requests_fetchers.crl_client import RequestsCRLFetcher
    from pyhanko_certvalidator.fetchers.requests_fetchers.ocsp_client import RequestsOCSPFetcher
    from requests.structures import CaseInsensitiveDict

    def fetch(clock: _Clock, url: str, data: bytes | None, headers: dict[str, str]) -> requests.Response:
        """One bounded exchange, as the response pyHanko's requests fetchers read (its failures are theirs)."""
        try:
            reply = exchange(url, data=data, headers=headers, seconds=clock.seconds, max_bytes=clock.max_bytes,
                             deadline=clock.deadline())
        except NetError as exc:
            raise requests.RequestException(str(exc)) from None
        if reply.status != 200:
            raise requests.RequestException(f"status code {reply.status}")
        response = requests.Response()
        response.status_code, response.url = reply.status, url
        response.headers = CaseInsensitiveDict(reply.headers)
        response._content = reply.content
        return response

    class Bounded:
        """pyHanko's requests fetchers with `exchange` in place of requests.get and requests.post."""

        clock: _Clock
        user_agent: str

        def _get(self, url: str, *, acceptable_content_types: Iterable[str]) -> Awaitable[requests.Response]:
            headers = {"Accept": ",".join(acceptable_content_types), "User-Agent": self.user_agent}
            return asyncio.to_thread(fetch, self.clock, url, None, headers)

        def _post(self, url: str, data: bytes, *, content_type: str,
                  acceptable_content_types: Iterable[str]) -> Awaitable[requests.Response]:
            headers = {"Accept": ",".join(acceptable_content_types), "User-Agent": self.user_agent,
                       "Content-Type": content_type}
            return asyncio.to_thread(fetch, self.clock, url, data, headers)

    class Ocsp(Bounded, RequestsOCSPFetcher):
        pass

    class Crl(Bounded, RequestsCRLFetcher):
        pass

    class Certificates(Bounded, RequestsCertificateFetcher):
        pass

    class Backend(RequestsFetcherBackend):
        def __init__(self, seconds: float, max_bytes: int) -> None:
            super().__init__(per_request_timeout=seconds)
            self.clock = _Clock(seconds, max_bytes)

        def get_fetchers(self) -> Fetchers:
            budget = FetchBudget(self.limits)
            made = (Ocsp(budget=budget), Crl(budget=budget),  # type: ignore[no-untyped-call]
                    Certificates(budget=budget))
            for fetcher in made:
                fetcher.clock = self.clock
            return Fetchers(ocsp_fetcher=made[0], crl_fetcher=made[1], cert_fetcher=made[2])

    return Backend
