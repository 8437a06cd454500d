"""Session fixtures for trusted time, long-term validation and PKCS#11 tests (registered by tests/conftest.py's
`pytest_plugins`): `trust_services` — the test PKI with its TSA, OCSP responder and CRL on 127.0.0.1
(tests/trust_services.py) — and `softhsm_token` — a SoftHSM2 token whose RSA key, generated on the token, has a
certificate from that PKI (tests/softhsm.py). Each skips with the reason when it cannot be had."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from tests import softhsm
from tests.trust_services import TrustServices


@pytest.fixture(scope="session")
def trust_services() -> Iterator[TrustServices]:
    """The test PKI and its services, started once for the session and stopped at its end. Tests that revoke a
    certificate should revoke one they issued themselves (issue_signer), as the services are shared."""
    try:
        services = TrustServices().start()
    except (OSError, RuntimeError) as exc:
        pytest.skip(f"the test trust services could not start on 127.0.0.1: {exc}")
    try:
        yield services
    finally:
        services.stop()


@pytest.fixture(scope="session")
def softhsm_token(trust_services: TrustServices, tmp_path_factory: pytest.TempPathFactory) -> softhsm.SoftHsmToken:
    """A SoftHSM2 token (label `auditor-test`, user PIN 123456) with the RSA 2048 key `report-signer` made on it and
    its certificate, issued by the test root, stored beside it on the token (same label and CKA_ID) and written as
    PEM to `cert_path`. Use `env` (SOFTHSM2_CONF) for a subprocess or CliRunner, `activated()` in this process."""
    reason = softhsm.available()
    if reason is not None:
        pytest.skip(reason)
    try:
        token = softhsm.create_token(tmp_path_factory.mktemp("softhsm"))
    except RuntimeError as exc:
        pytest.skip(f"the SoftHSM2 token could not be made: {exc}")
    now = dt.datetime.now(dt.UTC)
    cert, _ = trust_services.issue_signer("Auditor Token Signer", public_key=token.public_key,
                                          not_before=now - dt.timedelta(hours=1), not_after=now + dt.timedelta(days=30))
    token.store_certificate(cert)
    return token
