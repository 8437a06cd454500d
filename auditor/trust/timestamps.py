"""Trusted time (RFC 3161): the client of a time-stamping authority and the check of a token.

pyHanko makes and validates the PDF's timestamps; this module adds what it leaves to its callers: a TSA client
that checks the answer (nonce, message imprint, size, time limit) with the standard library, one line per problem.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.trust import net
from auditor.trust.certificates import quiet_pyhanko, to_asn1

# the whole exchange (connect, send, every read): a TSA answers in well under a second; a hung or trickling one must
# not hang the audit
TIMEOUT_SECONDS = 20
MAX_REPLY_BYTES = 1 << 20  # a timestamp reply is a few KB
ENV_URL = "AUDITOR_TSA_URL"
ENV_ROOTS = "AUDITOR_TSA_ROOTS"


class TimestampError(Exception):
    """The TSA could not be reached or its answer is not a valid timestamp for our request (one line)."""


def _timestamper_class() -> type:
    from pyhanko.sign.timestamps.api import TimeStamper

    class UrllibTimeStamper(TimeStamper):
        """An RFC 3161 client over HTTP(S) (`net.exchange`: http(s) only, the whole exchange within TIMEOUT_SECONDS,
        at most MAX_REPLY_BYTES), the answer's message imprint checked against the request (pyHanko checks the
        nonce)."""

        def __init__(self, url: str) -> None:
            super().__init__(include_nonce=True)  # type: ignore[no-untyped-call]
            self.url = url

        async def async_request_tsa_response(self, req: Any) -> Any:
            return await asyncio.to_thread(self._post, req)

        def _post(self, req: Any) -> Any:
            from asn1crypto import tsp

            try:
                reply = net.exchange(self.url, data=req.dump(), seconds=TIMEOUT_SECONDS, max_bytes=MAX_REPLY_BYTES,
                                     headers={"Content-Type": "application/timestamp-query",
                                              "Accept": "application/timestamp-reply"})
            except net.TooLarge:
                raise TimestampError("the TSA's answer is larger than 1 MiB: not a timestamp reply") from None
            except net.NetError as exc:
                raise TimestampError(f"cannot reach the TSA ({exc})") from None
            if not 200 <= reply.status < 300:
                raise TimestampError(f"the TSA answered HTTP {reply.status} ({reply.reason})")
            body, kind = reply.content, reply.header("Content-Type")
            if kind.split(";")[0].strip() != "application/timestamp-reply":
                raise TimestampError(f"the TSA answered {kind or 'no content type'}, not application/"
                                     "timestamp-reply")
            status = _status(body)
            if status is None:
                raise TimestampError("the TSA's answer is not an RFC 3161 timestamp reply")
            if status["status"].native not in ("granted", "granted_with_mods"):
                text = "; ".join(status["status_string"].native or []) or status["status"].native
                raise TimestampError(f"the TSA refused the request ({text})")
            try:
                response = tsp.TimeStampResp.load(body)
                response.native  # noqa: B018 (parse it all now: a malformed reply fails here, not later)
            except Exception:
                raise TimestampError("the TSA's answer is not an RFC 3161 timestamp reply") from None
            try:
                info = response["time_stamp_token"]["content"]["encap_content_info"]["content"].parsed
                imprint = info["message_imprint"]
            except Exception:
                raise TimestampError("the TSA's answer holds no timestamp token") from None
            if req["nonce"].native is not None and info["nonce"].native != req["nonce"].native:
                raise TimestampError("the TSA's answer carries another nonce than the request's (a replayed or "
                                     "forged answer)")
            if imprint.dump() != req["message_imprint"].dump():
                raise TimestampError("the TSA's token is for another document (its message imprint is not the one "
                                     "requested)")
            return response

    return UrllibTimeStamper


def _status(body: bytes) -> Any:
    """The PKIStatusInfo of a TimeStampResp, read on its own: asn1crypto's TimeStampResp requires the token, which
    RFC 3161 leaves out of a refusal."""
    from asn1crypto import core, tsp

    class StatusFirst(core.Sequence):  # type: ignore[misc]
        _fields = [("status", tsp.PKIStatusInfo), ("time_stamp_token", core.Any, {"optional": True})]  # noqa: RUF012

    try:
        parsed = StatusFirst.load(body)
        status = parsed["status"]
        status.native  # noqa: B018
        return status
    except Exception:
        return None


def timestamper(url: str) -> Any:
    """A pyHanko TimeStamper for `url`."""
    return _timestamper_class()(url)


def token_for(url: str, data: bytes) -> bytes:
    """An RFC 3161 token (DER ContentInfo) over sha256(data), from the TSA at `url`; TimestampError otherwise."""
    from pyhanko.sign.timestamps.common_utils import TimestampRequestError

    try:
        token = asyncio.run(timestamper(url).async_timestamp(hashlib.sha256(data).digest(), "sha256"))
    except TimestampRequestError as exc:
        raise TimestampError(_plain(exc)) from None
    dumped: bytes = token.dump()
    return dumped


def _plain(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "bad nonce" in text:
        return "the TSA's answer carries another nonce than the request's (a replayed or forged answer)"
    return text[:200]


@dataclass
class TokenFacts:
    """What a timestamp token vouches for, once checked."""

    time: dt.datetime
    tsa: str
    trusted: bool
    intact: bool
    problem: str | None = None
    expires: dt.datetime | None = None  # the end of the TSA certificate's validity: how long the token proves


def token_time(token: bytes) -> tuple[dt.datetime, Any] | None:
    """(genTime, TSA certificate as asn1crypto) of a token, read without validating it; None if unreadable."""
    from asn1crypto import cms
    from pyhanko.sign.general import extract_certificate_info

    try:
        signed = cms.ContentInfo.load(token)["content"]
        when: dt.datetime = signed["encap_content_info"]["content"].parsed["gen_time"].native
        return when, extract_certificate_info(signed).signer_cert
    except Exception:
        return None


def check_token(token: bytes, data: bytes, trusted: list[Any], *, at: dt.datetime | None = None,
                certs: list[Any] | None = None, ocsps: list[Any] | None = None, crls: list[Any] | None = None,
                revocation: str = "soft-fail") -> TokenFacts:
    """An RFC 3161 token over sha256(data): intact (signature and imprint), and the TSA certificate trusted by one
    of `trusted` (cryptography certificates) at `at` (default now), with `certs`, `ocsps` and `crls` (asn1crypto
    objects: validation data kept beside it) and pyHanko's legacy revocation mode (`hard-fail`: the data must cover
    every certificate that names a source)."""
    from asn1crypto import cms
    from pyhanko.sign.validation.generic_cms import validate_tst_signed_data
    from pyhanko_certvalidator import ValidationContext

    try:
        info = cms.ContentInfo.load(token)
        signed = info["content"]
        tst = signed["encap_content_info"]["content"].parsed
        when = tst["gen_time"].native
    except Exception:
        return TokenFacts(dt.datetime.min.replace(tzinfo=dt.UTC), "?", False, False, "not an RFC 3161 token")
    context = ValidationContext(trust_roots=[to_asn1(c) for c in trusted], allow_fetching=False,
                                revocation_mode=revocation, moment=at, other_certs=certs or [], ocsps=ocsps or [],
                                crls=crls or [])
    with quiet_pyhanko():
        try:
            status = asyncio.run(validate_tst_signed_data(
                signed, context, lambda algorithm: hashlib.new(algorithm, data).digest()))
        except Exception as exc:
            return TokenFacts(when, "?", False, False, f"cannot be validated ({type(exc).__name__})")
    cert = status.get("signing_cert")
    name = cert.subject.human_friendly if cert is not None else "?"
    trust = status.get("trust_problem_indic") is None and bool(trusted)
    expires = cert["tbs_certificate"]["validity"]["not_after"].native if cert is not None else None
    return TokenFacts(when, name, trust, bool(status.get("intact")) and bool(status.get("valid")), expires=expires)


def default_url() -> str | None:
    return os.environ.get(ENV_URL) or None


def chosen_url(option: str | None, spec: str | None = None, *, spec_file: Path | None = None) -> str | None:
    """The TSA to ask: `option` (--timestamp-url), else `spec` (signing.timestamp_url), else $AUDITOR_TSA_URL; None
    when none is set. One that is not an http:// or https:// URL is an InputError naming where it was set: a
    file:// "TSA" would have a local file read as its reply, and a FIFO there would hang the command."""
    for url, where in ((option, "--timestamp-url"), (spec, "signing.timestamp_url"), (default_url(), ENV_URL)):
        if url:
            problem = net.scheme_problem(url)
            if problem is not None:
                raise InputError(f"the TSA's URL is {problem}", where=where,
                                 file=spec_file if where == "signing.timestamp_url" else None,
                                 fix="give the TSA's http:// or https:// URL (e.g. https://tsa.example/tsr)")
            return url
    return None


def default_roots() -> list[Path]:
    value = os.environ.get(ENV_ROOTS, "")
    return [Path(p) for p in value.split(os.pathsep) if p]


def without_credentials(url: str) -> str:
    """The URL as it may be printed and signed: no user part, no password or token in its query (`urls.shown`)."""
    from auditor.core.urls import shown

    return shown(url)


def describe_utc(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def read_error(url: str, exc: TimestampError) -> InputError:
    return InputError(f"no timestamp from {without_credentials(url)}: {exc}", where="signing.timestamp_url",
                      fix="check the TSA's URL and that it is reachable, or remove timestamp_url to sign without "
                          "trusted time")
