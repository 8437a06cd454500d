"""The bundle's trusted time over the years, renewed as an evidence record is (RFC 4998): `bundle.tsr` dates the
bundle's signature; each renewal `bundle.renewal-<n>.json` holds a new token over the previous token *and* the
validation data of the TSA that made it (its certificate chain, OCSP responses, CRLs), collected while that TSA's
certificate was still valid.

Checked the way the chain was built: the newest token at its own time (a TSA certificate expiring before `--at`
ends the proof: renew before then), every older one at the time of the token that covers it, with the validation
data kept in that renewal; the first one covers the bundle's signature. A renewal file is strict JSON:

    {"renews": "bundle.tsr", "validation_data": {"certificates": [b64 DER...], "ocsp": [...], "crls": [...]},
     "token": b64 DER}

and its token's message imprint is the sha256 of the previous token's DER bytes followed by the validation data as
compact sorted JSON (`dsse.statement_bytes`)."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.core.files import MAX_SMALL_BYTES, Unreadable, read_regular
from auditor.trust import net, timestamps
from auditor.trust.certificates import quiet_pyhanko, to_asn1
from auditor.trust.dsse import parse_envelope, statement_bytes
from auditor.trust.layout import BUNDLE_NAME, RENEWAL, TOKEN_NAME
from auditor.trust.strict_json import BadJSON, strict_json
from auditor.trust.verdict import Verdict

MAX_RENEWALS = 1_000  # one every few years: a chain this long is an attack, not an archive


@dataclass
class Link:
    """One token of the chain: the file it is in, its DER bytes, the bytes its imprint covers, and the validation
    data its renewal kept for the token before it (None for bundle.tsr)."""

    name: str
    token: bytes
    covered: bytes
    validation: dict[str, list[Any]] | None = None  # asn1crypto certs, ocsps, crls


def chain_names(root: Path) -> list[str]:
    """bundle.tsr and the renewals in the run folder, in order; a gap in the numbers is a ValueError."""
    names = sorted((int(m.group(1)), m.group(0)) for m in (RENEWAL.fullmatch(e.name) for e in os.scandir(root))
                   if m is not None)
    if len(names) > MAX_RENEWALS:
        raise ValueError(f"more than {MAX_RENEWALS:,} renewals")
    numbers = [n for n, _ in names]
    if numbers != list(range(1, len(numbers) + 1)):
        raise ValueError(f"the renewals are numbered {', '.join(map(str, numbers[:5]))}…: one is missing (removed "
                         "after it was written)")
    return [TOKEN_NAME, *(name for _, name in names)] if os.path.lexists(root / TOKEN_NAME) or names else []


def read_chain(root: Path, signature: bytes) -> list[Link]:
    """The chain's links, each with what its token covers; ValueError or Unreadable naming the first problem."""
    names = chain_names(root)
    if not names:
        return []
    links = [Link(TOKEN_NAME, read_regular(root / TOKEN_NAME, limit=MAX_SMALL_BYTES, follow=False), signature)]
    for name in names[1:]:
        document = strict_json(read_regular(root / name, limit=MAX_SMALL_BYTES, follow=False), name)
        if not isinstance(document, dict) or document.get("renews") != links[-1].name \
                or not isinstance(document.get("token"), str) or not isinstance(document.get("validation_data"), dict):
            raise ValueError(f"{name} is not a renewal of {links[-1].name} (renews, validation_data, token)")
        data = document["validation_data"]
        try:
            token = base64.b64decode(document["token"], validate=True)
            parsed = _parse_validation_data(data)
        except (binascii.Error, ValueError, TypeError) as exc:
            raise ValueError(f"{name}: malformed ({str(exc)[:80]})") from None
        links.append(Link(name, token, links[-1].token + statement_bytes(data), parsed))
    return links


def _parse_validation_data(data: dict[str, Any]) -> dict[str, list[Any]]:
    from asn1crypto import crl, ocsp, x509

    kinds = {"certificates": x509.Certificate, "ocsp": ocsp.OCSPResponse, "crls": crl.CertificateList}
    if set(data) - set(kinds) or not all(isinstance(data.get(k, []), list) for k in kinds):
        raise ValueError("validation_data holds certificates, ocsp and crls, each a list of base64 DER")
    out: dict[str, list[Any]] = {}
    for key, kind in kinds.items():
        items = []
        for item in data.get(key, []):
            loaded = kind.load(base64.b64decode(str(item), validate=True))
            loaded.native  # noqa: B018 (parse it whole now: a malformed item fails here)
            items.append(loaded)
        out[key] = items
    return out


def newest(root: Path) -> tuple[dt.datetime, str, dt.datetime] | None:
    """(time, TSA, TSA certificate's expiry) of the chain's newest token, read without validating it."""
    try:
        names = chain_names(root)
        if not names:
            return None
        last = names[-1]
        data = read_regular(root / last, limit=MAX_SMALL_BYTES, follow=False)
        token = data if last == TOKEN_NAME else base64.b64decode(strict_json(data, last)["token"], validate=True)
    except (Unreadable, ValueError, KeyError, TypeError, BadJSON, binascii.Error):
        return None
    read = timestamps.token_time(token)
    if read is None:
        return None
    when, cert = read
    return when, cert.subject.human_friendly, cert["tbs_certificate"]["validity"]["not_after"].native


def bundle_signature(bundle: Path) -> bytes:
    """The bundle's signature bytes, which bundle.tsr dates."""
    _statement, _payload, signatures = parse_envelope(read_regular(bundle, limit=MAX_SMALL_BYTES, follow=False))
    return base64.b64decode(signatures[0]["sig"], validate=True)


def check_chain(root: Path, bundle: Path, trusted: list[Any], *, at: dt.datetime | None = None,
                expected: bool = False) -> list[Verdict]:
    """The bundle's trusted time: `bundle.tsr` and its renewals, one verdict. `expected`: the predicate names a TSA,
    so bundle.tsr must be there."""
    name = f"{BUNDLE_NAME} (trusted time)"
    if not os.path.lexists(root / TOKEN_NAME):
        if expected:
            return [Verdict(False, name, f"{TOKEN_NAME} is missing, but the bundle says the run was signed with a "
                                         "TSA (removed after signing)")]
        try:
            return [Verdict(False, name, f"renewals without {TOKEN_NAME}: they renew nothing")] \
                if chain_names(root) else []
        except ValueError as exc:
            return [Verdict(False, name, str(exc))]
    try:
        links = read_chain(root, bundle_signature(bundle))
    except (Unreadable, ValueError, KeyError, IndexError, TypeError) as exc:
        return [Verdict(False, name, f"not checked: {str(exc)[:160]}")]
    times = [timestamps.token_time(link.token) for link in links]
    facts = []
    for index, link in enumerate(links):
        later = links[index + 1] if index + 1 < len(links) else None
        read = times[index]
        if read is None:
            return [Verdict(False, name, f"{link.name} is not an RFC 3161 token")]
        # the newest at its own time (its proof must reach --at, below); an older one when the next covered it
        moment = read[0] if later is None else (times[index + 1] or read)[0]
        known = later.validation if later is not None else None
        if known is not None:
            fact = timestamps.check_token(link.token, link.covered, trusted, at=moment, certs=known["certificates"],
                                          ocsps=known["ocsp"], crls=known["crls"], revocation="hard-fail")
        else:
            fact = timestamps.check_token(link.token, link.covered, trusted, at=moment)
        if fact.problem or not fact.intact:
            what = "the bundle's signature" if index == 0 else f"{links[index - 1].name} and its validation data"
            return [Verdict(False, name, f"{link.name} is not a valid timestamp of {what} "
                                         f"({fact.problem or 'its imprint or signature does not match'})")]
        if not fact.trusted:
            where = "at its own time" if later is None else f"when {later.name} renewed it"
            return [Verdict(False, name, f"{link.name} says {timestamps.describe_utc(fact.time)}, by {fact.tsa}, "
                                         f"which no --trust certificate vouches for {where}")]
        facts.append(fact)
    first, last = facts[0], facts[-1]
    when = timestamps.describe_utc(first.time)
    moment = at or dt.datetime.now(dt.UTC)
    if moment < first.time:
        return [Verdict(False, name, f"the bundle's signature did not exist yet at {timestamps.describe_utc(moment)}: "
                                     f"the TSA dates it {when}")]
    if last.expires is not None and moment > last.expires:
        return [Verdict(False, name, f"the bundle's signature existed at {when}, but the trusted time has expired: "
                                     f"the newest token ({timestamps.describe_utc(last.time)}, by {last.tsa}) is "
                                     f"vouched for until {timestamps.describe_utc(last.expires)}, and nothing renewed "
                                     "it (`auditor restamp` adds a renewal before then)")]
    renewed = "" if len(links) == 1 else \
        f"; renewed {len(links) - 1} time{'s' if len(links) > 2 else ''}, the newest at " \
        f"{timestamps.describe_utc(last.time)} by {last.tsa}"
    until = f"; proven until {timestamps.describe_utc(last.expires)}" if last.expires is not None else ""
    return [Verdict(True, name, f"the bundle's signature existed at {when}, vouched for by the TSA {first.tsa} "
                                f"(trusted){renewed}{until}")]


def collect_validation_data(token: bytes, trusted: list[Any], *, timeout: float = 20) -> dict[str, list[str]]:
    """The validation data of the TSA that made `token`, fetched now (its certificate chain up to a `trusted` root,
    an OCSP response or CRL for every certificate that names a source), as base64 DER lists; InputError with the
    reason when its certificate does not validate now (expired, revoked, untrusted, a responder unreachable)."""
    import asyncio

    from asn1crypto import cms
    from pyhanko.sign.general import extract_certificate_info
    from pyhanko_certvalidator import CertificateValidator, ValidationContext

    signed = cms.ContentInfo.load(token)["content"]
    info = extract_certificate_info(signed)
    context = ValidationContext(trust_roots=[to_asn1(c) for c in trusted], allow_fetching=True,
                                revocation_mode="hard-fail",
                                fetcher_backend=net.fetchers(timeout))
    validator = CertificateValidator(info.signer_cert, intermediate_certs=info.other_certs,
                                     validation_context=context)
    with quiet_pyhanko():
        try:
            path = asyncio.run(validator.async_validate_usage(key_usage=set()))  # type: ignore[no-untyped-call]
        except Exception as exc:
            raise InputError(f"the previous timestamp's TSA ({info.signer_cert.subject.human_friendly}) cannot be "
                             f"validated now: {str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__}",
                             fix="renew before its certificate expires, with --trust naming its root") from None
    certs = [c.dump() for c in path]
    return {"certificates": [base64.b64encode(d).decode("ascii") for d in certs],
            "ocsp": [base64.b64encode(o.dump()).decode("ascii") for o in context.ocsps],
            "crls": [base64.b64encode(c.dump()).decode("ascii") for c in context.crls]}
