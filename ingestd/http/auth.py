"""The optional bearer token: where it comes from and how it is checked.

The token is read from an environment variable (``--token-env NAME``) or a file
(``--token-file PATH``), never from argv, and never logged. Requests carry it as
``Authorization: Bearer <token>`` (or ``X-Ingestd-Token``); comparison is constant-time.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from pathlib import Path

from ingestd import files
from ingestd.errors import ConfigError
from ingestd.files import read_capped
from ingestd.settings import LOOPBACK_HOSTS

TOKEN_FILE_MAX_BYTES = 64 << 10  # a token is a line: a larger file is the wrong one


def load_token(*, env_name: str | None, file: Path | None, env: Mapping[str, str]) -> str | None:
    """The configured token, or None when neither source is given.

    Raises:
        ConfigError: a source is given but empty, unreadable or both are given; the file is not
            the user's own or is readable or writable by group or others (``ingestd.files``).
    """
    if env_name and file:
        raise ConfigError("give either --token-env or --token-file, not both")
    if env_name:
        value = env.get(env_name, "").strip()
        if not value:
            raise ConfigError(f"--token-env {env_name}: that environment variable is unset or empty")
        return value
    if file:
        # Checked like ssh checks a key: a token others can read (or replace) is no secret.
        files.require_safe(files.problems([file], secret=True))
        try:
            value = read_capped(file, TOKEN_FILE_MAX_BYTES, "token file").decode("utf-8").strip()
        except UnicodeDecodeError:
            raise ConfigError(f"--token-file {file}: not UTF-8 text") from None
        except OSError as e:
            raise ConfigError(f"--token-file {file}: cannot read it ({e.strerror})") from None
        if not value:
            raise ConfigError(f"--token-file {file}: the file is empty")
        return value
    return None


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind without a token.

    Raises:
        ConfigError: ``host`` is not loopback and no token is configured.
    """
    if host not in LOOPBACK_HOSTS and token is None:
        raise ConfigError(
            f"refusing to bind {host}: binding anything but 127.0.0.1 needs a token "
            "(--token-env NAME or --token-file PATH)"
        )


def presented_token(headers: Mapping[str, str]) -> str | None:
    """The token a request presents, or None."""
    auth = headers.get("Authorization")
    if auth is not None and auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return headers.get("X-Ingestd-Token")


def _header_bytes(value: str) -> bytes:
    """A header value's bytes as they came off the wire.

    aiohttp decodes header bytes as UTF-8 with ``surrogateescape``, so a byte such as ``\\xff``
    arrives as a lone surrogate that a plain ``.encode()`` refuses (it used to raise: a 500 and a
    traceback per request). Encoding back with the same handler gives the original bytes.
    """
    return value.encode("utf-8", "surrogateescape")


def token_ok(expected: str, presented: str | None) -> bool:
    """Constant-time comparison (``hmac.compare_digest``) of the bytes; any bytes are a value, never an error."""
    if presented is None:
        return False
    try:
        got = _header_bytes(presented)
    except UnicodeEncodeError:  # a surrogate that was not an escaped byte: cannot be the token
        return False
    return hmac.compare_digest(expected.encode(), got)
