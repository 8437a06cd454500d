"""URLs as people may see them, and the credentials they must not carry.

A URL names a service (a register, a TSA, an MLflow store, a Dask scheduler); a password or token written into it
would be printed in an error line, kept in evidence.json, signed into a bundle and archived with the run's inputs.
`shown` is the one rendering of a URL for people and files: the user part and every secret-looking query value go.
`credentials_in` says which forms a URL carries, so that a spec holding one is refused (the secret belongs in an
environment variable or the service's own credential store)."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# query parameters that carry secrets: libpq (password, sslpassword), OAuth and API tokens, signed URLs
SECRET_PARAMETERS = frozenset({
    "password", "passwd", "pass", "pwd", "sslpassword", "token", "access_token", "id_token", "refresh_token",
    "auth", "authorization", "api_key", "apikey", "api-key", "key", "secret", "client_secret", "sig", "signature",
    "x-amz-signature", "x-amz-security-token", "x-goog-signature", "sas", "credential", "credentials"})
HIDDEN = "***"
SWITCHED_OFF = ("off", "false", "none")  # a register location written as one of these words: no register at all


def switched_off(location: object) -> bool:
    """A register location that means none: the words `--register` takes (`register:` in a spec, quoted or not)."""
    return isinstance(location, str) and location.strip().lower() in SWITCHED_OFF


def _secret(name: str) -> bool:
    lowered = name.lower()
    return lowered in SECRET_PARAMETERS or lowered.endswith(("password", "token", "secret"))


def credentials_in(url: str) -> list[str]:
    """The credential forms `url` carries, in words ("a password in its user part", "a `token=` parameter"); empty
    when none."""
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:  # an unparsable port: the URL's own check reports it
        return []
    found = []
    if password:
        found.append("a password in its user part (user:password@)")
    elif user and "@" in parts.netloc and parts.scheme not in ("postgresql", "postgres", "postgresql+psycopg"):
        found.append("a user name in its user part (a token is often passed as one)")
    found += [f"a `{name}=` parameter" for name, _ in parse_qsl(parts.query, keep_blank_values=True) if _secret(name)]
    if parts.fragment and any(_secret(name) for name, _ in parse_qsl(parts.fragment, keep_blank_values=True)):
        found.append("a secret in its fragment")
    return found


def shown(url: str) -> str:
    """`url` for people and files: without its user part, with the values of secret-looking query parameters
    replaced by ***, without a fragment. Not a URL? Returned as given (a path, an SQLite file)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        parts = urlsplit(url)
        host, port = parts.netloc.rpartition("@")[2], None
    if not parts.scheme or not parts.netloc:
        return url
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    query = urlencode([(name, HIDDEN if _secret(name) else value)
                       for name, value in parse_qsl(parts.query, keep_blank_values=True)], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s'\"<>()\[\]]+")


def scrubbed(text: str) -> str:
    """Free text (a library's error message) with every URL in it as `shown` renders it: a client that puts the
    URL it called, credentials included, into its exception must not have them printed."""
    return _URL_IN_TEXT.sub(lambda match: shown(match.group()), text)
