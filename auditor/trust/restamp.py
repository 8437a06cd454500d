"""`auditor restamp`: carry a signed run's proof past its TSA's expiry, and list the runs that need it.

Before the newest timestamp's TSA certificate expires, a restamp appends to report.pdf (and to each other PDF document
the run certified) the validation data of that timestamp (its TSA's chain and OCSP or CRL, fetched now) and a new
document timestamp (a PAdES archive timestamp, an incremental update: the bundle pins the certified revision, so the
run still verifies), and renews the bundle's trusted time (`token_chain`: a new token over the previous one and its
TSA's validation data). Both are appended, never rewritten: a PDF is replaced whole by the longer file (temporary
then rename), the renewal is a new file.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import os
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.core.files import MAX_JSON_BYTES, MAX_SMALL_BYTES, Unreadable, read_regular, replace_file
from auditor.trust import net, timestamps
from auditor.trust.certificates import quiet_pyhanko, to_asn1
from auditor.trust.dsse import statement_bytes
from auditor.trust.layout import BUNDLE_NAME, REPORT_PDF, TOKEN_NAME, renewal_name, run_pdfs
from auditor.trust.pdf_revisions import certification, fresh_reader, later_revision_problem, pdf_reader
from auditor.trust.pdf_verify import TrustedTime, newest_trusted_time
from auditor.trust.strict_json import json_object
from auditor.trust.token_chain import bundle_signature, chain_names, collect_validation_data, newest, read_chain

FETCH_SECONDS = 20  # per OCSP or CRL request while collecting validation data


@dataclass
class Restamped:
    """What one restamp added, in words."""

    run: Path
    lines: list[str]


def restamp_run(run_dir: Path, *, url: str, trusted: list[Any]) -> Restamped:
    """Restamp one signed run folder with the TSA at `url`, whose certificates (and the previous TSAs') chain to
    `trusted`; one InputError line on the first problem, with what was already written said."""
    run_dir = Path(run_dir)
    if not (run_dir / BUNDLE_NAME).is_file():
        raise InputError("not a signed run folder (no bundle.dsse.json)", file=run_dir,
                         fix="give the folder of a signed run")
    proof = proof_of(run_dir)
    if proof.until is not None and proof.until < dt.datetime.now(dt.UTC):
        raise InputError(f"too late to renew: {proof.what} is vouched for until {timestamps.describe_utc(proof.until)}"
                         ", and nothing proves the run after that; nothing was appended", file=run_dir,
                         fix="restamp runs before their proof ends (`auditor restamp --due 1y DIR` lists them)")
    _rehearse(url, trusted)
    lines = []
    for pdf in _signed_pdfs(run_dir):  # report.pdf, and the documents certified beside it
        lines.append(_restamp_pdf(pdf, url, trusted))
    try:
        lines.append(_renew_bundle(run_dir, url, trusted))
    except InputError as exc:
        if lines:
            done = ", ".join(line.split(":", 1)[0] for line in lines)
            raise InputError(f"{exc.problem} ({done} restamped; the bundle's time was not renewed)",
                             file=exc.file, fix=exc.fix) from None
        raise
    return Restamped(run_dir, lines)


def _signed_pdfs(run_dir: Path) -> list[Path]:
    """report.pdf (whatever it holds: `_restamp_pdf` says when it is not the tool's), then each other PDF of the run
    that carries the tool's certification (runs signed before documents were signed left them uncertified)."""
    found = [run_dir / REPORT_PDF] if os.path.lexists(run_dir / REPORT_PDF) else []
    for pdf in run_pdfs(run_dir):
        if pdf.name == REPORT_PDF:
            continue
        with contextlib.suppress(Unreadable, Exception):
            if certification(pdf_reader(read_regular(pdf, limit=MAX_JSON_BYTES, follow=False))) is not None:
                found.append(pdf)
    return found


def _rehearse(url: str, trusted: list[Any]) -> None:
    """The TSA answers and chains to `trusted` before anything is appended."""
    probe = b"auditor: rehearsal before restamping"
    try:
        token = timestamps.token_for(url, probe)
    except timestamps.TimestampError as exc:
        raise InputError(f"no timestamp from {timestamps.without_credentials(url)}: {exc}", where="--timestamp-url",
                         fix="check the TSA's URL and that it is reachable") from None
    facts = timestamps.check_token(token, probe, trusted)
    if not facts.trusted or not facts.intact:
        raise InputError(f"the TSA at {timestamps.without_credentials(url)} signs with a certificate ({facts.tsa}) "
                         "that does not chain to a --trust certificate", where="--trust",
                         fix="name the TSA's root certificate with --trust (or AUDITOR_TSA_ROOTS)")


def _restamp_pdf(pdf: Path, url: str, trusted: list[Any]) -> str:
    from pyhanko.sign.signers.pdf_signer import PdfTimeStamper
    from pyhanko.sign.validation.dss import async_add_validation_info
    from pyhanko_certvalidator import ValidationContext

    try:
        data = read_regular(pdf, limit=MAX_JSON_BYTES, follow=False)
    except Unreadable as exc:
        raise InputError(f"{pdf.name} is {exc}", file=pdf, fix="restamp a run folder as `auditor report` wrote it") \
            from None
    reader = pdf_reader(data)
    certifying = certification(reader)
    if certifying is None:
        raise InputError(f"{pdf.name} holds no certification by the tool", file=pdf,
                         fix="run `auditor verify` on the run first")
    before = newest_trusted_time(reader)

    def context() -> Any:
        return ValidationContext(trust_roots=[to_asn1(c) for c in trusted], allow_fetching=True,
                                 revocation_mode="hard-fail",
                                 fetcher_backend=net.fetchers(FETCH_SECONDS))

    with quiet_pyhanko():
        try:
            if not reader.embedded_timestamp_signatures:  # no document timestamp yet: the signature's own data first
                with_data = BytesIO()
                asyncio.run(async_add_validation_info(certifying, context(), output=with_data))
                data = with_data.getvalue()
            result = BytesIO()
            stamper = PdfTimeStamper(timestamps.timestamper(url))
            asyncio.run(stamper.async_update_archival_timestamp_chain(fresh_reader(data), context(), in_place=False,
                                                                      output=result))
        except timestamps.TimestampError as exc:
            raise InputError(f"no timestamp from {timestamps.without_credentials(url)}: {exc}", file=pdf,
                             fix="check the TSA's URL and that it is reachable") from None
        except Exception as exc:
            raise InputError(f"{pdf.name} cannot be restamped: {_first_line(exc)}{_late(before)}", file=pdf,
                             fix="restamp before the newest timestamp's TSA certificate expires, with --trust naming "
                                 "its root") from None
    new = result.getvalue()
    problem = later_revision_problem(pdf_reader(new), certifying.signed_revision)
    if problem is not None:  # our own update: a bug, never written
        raise InputError(f"the restamped {pdf.name} would not verify ({problem}); nothing was written", file=pdf,
                         fix="report this as a bug")
    replace_file(pdf, new, fix="check that the run folder is writable")
    stamp = newest_trusted_time(pdf_reader(new))
    assert stamp is not None
    return (f"{pdf.name}: document timestamp {timestamps.describe_utc(stamp.time)} by {stamp.tsa}, proven until "
            f"{timestamps.describe_utc(stamp.expires)}")


def _late(before: TrustedTime | None) -> str:
    if before is not None and dt.datetime.now(dt.UTC) > before.expires:
        return (f" (its newest timestamp's TSA certificate expired on {timestamps.describe_utc(before.expires)}: too "
                "late to renew)")
    return ""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]


def _renew_bundle(run_dir: Path, url: str, trusted: list[Any]) -> str:
    """A first bundle.tsr for a run signed without a TSA, else the next renewal."""
    bundle = run_dir / BUNDLE_NAME
    try:
        signature = bundle_signature(bundle)
        names = chain_names(run_dir)
        links = read_chain(run_dir, signature)
    except (Unreadable, ValueError, KeyError, IndexError, TypeError) as exc:
        raise InputError(f"the bundle's trusted time cannot be read ({str(exc)[:160]})", file=run_dir,
                         fix="run `auditor verify` on the run first") from None
    if not links:
        token = _token(url, signature, run_dir)
        _write_new(run_dir / TOKEN_NAME, token)
        when = timestamps.token_time(token)
        return f"{TOKEN_NAME}: the bundle's first trusted time, {_when(when)}"
    previous = links[-1]
    data = collect_validation_data(previous.token, trusted, timeout=FETCH_SECONDS)
    token = _token(url, previous.token + statement_bytes(data), run_dir)
    name = renewal_name(len(names))
    document = {"renews": previous.name, "validation_data": data, "token": base64.b64encode(token).decode("ascii")}
    _write_new(run_dir / name, statement_bytes(document) + b"\n")
    return f"{name}: the bundle's trusted time renewed, {_when(timestamps.token_time(token))}"


def _when(read: tuple[dt.datetime, Any] | None) -> str:
    if read is None:
        return "?"
    when, cert = read
    return (f"{timestamps.describe_utc(when)} by {cert.subject.human_friendly}, proven until "
            f"{timestamps.describe_utc(cert['tbs_certificate']['validity']['not_after'].native)}")


def _token(url: str, data: bytes, run_dir: Path) -> bytes:
    try:
        return timestamps.token_for(url, data)
    except timestamps.TimestampError as exc:
        raise InputError(f"no timestamp from {timestamps.without_credentials(url)}: {exc}", file=run_dir,
                         fix="check the TSA's URL and that it is reachable") from None


def _write_new(path: Path, data: bytes) -> None:
    """A new file of the run folder, never over one (another restamp meanwhile)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise InputError("the file appeared meanwhile (another restamp?)", file=path, fix="run restamp again") \
            from None
    except OSError as exc:
        raise InputError(f"cannot write ({exc.strerror})", file=path, fix="check that the run folder is writable") \
            from None
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


# --- which runs need it ----------------------------------------------------------------------------------------------

@dataclass
class Proof:
    """How long a run's signatures are proven: the earliest expiry of its newest trusted times (report.pdf's and
    the bundle's), or, without trusted time, of the signer's certificate."""

    run: Path
    until: dt.datetime | None
    what: str


def proof_of(run_dir: Path) -> Proof:
    ends: list[tuple[dt.datetime, str]] = []
    for pdf in run_pdfs(run_dir):
        with contextlib.suppress(Unreadable, Exception):
            stamp = newest_trusted_time(pdf_reader(read_regular(pdf, limit=MAX_JSON_BYTES, follow=False)))
            if stamp is not None:
                ends.append((stamp.expires, f"{pdf.name}'s newest timestamp ({stamp.tsa})"))
    token = newest(run_dir)
    if token is not None:
        ends.append((token[2], f"the bundle's newest timestamp ({token[1]})"))
    if ends:
        until, what = min(ends, key=lambda item: item[0])
        return Proof(run_dir, until, what)
    with contextlib.suppress(Exception):
        from auditor.trust.dsse import parse_envelope

        statement, _, _ = parse_envelope(read_regular(run_dir / BUNDLE_NAME, limit=MAX_SMALL_BYTES, follow=False))
        signer = json_object(json_object(statement.get("predicate")).get("signer"))
        end = dt.datetime.fromisoformat(str(signer["not_after"])).replace(tzinfo=dt.UTC)
        return Proof(run_dir, end, "no trusted time: the signer's certificate")
    return Proof(run_dir, None, "no trusted time and no signer certificate named")


def signed_runs(folder: Path) -> list[Path]:
    """`folder` if it is a signed run, else the signed run folders directly in it."""
    folder = Path(folder)
    if (folder / BUNDLE_NAME).is_file():
        return [folder]
    if not folder.is_dir():
        raise InputError("no such folder", file=folder, fix="give a run folder or the folder of run folders")
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and (p / BUNDLE_NAME).is_file())
