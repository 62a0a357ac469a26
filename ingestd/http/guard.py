"""Who may talk to the daemon: the ``Host`` and ``Origin`` rules (SPEC §10), checked by the app's middleware.

A web page the user visits can reach a loopback port. A "simple" cross-origin ``POST``
(``text/plain``, form or multipart bodies) is sent without a CORS preflight, and a
DNS-rebinding page reaches the port under its own host name (``Host: rebind.evil.example``),
after which the browser treats the daemon as same-origin and reads the answers. So, on
every route (routes added later included: ``checker`` runs in the app's one middleware):

- a ``Host`` that is not a name the daemon answers to (``127.0.0.1``, ``localhost``,
  ``[::1]``, the bound address, the ``allowed_hosts`` setting) is refused with 421;
- a request carrying an ``Origin`` that is not the daemon's own origin
  (``http://<one of those names>:<the port the request came in on>``) or listed in the
  ``allowed_origins`` setting is refused with 403 (``Origin: null``, sent by sandboxed
  frames and ``file:`` pages, included);
- no CORS header is ever sent, so a browser shows a page no answer.

Claude Code's http hooks and ``ingestd.forward`` are not browsers: they send
``Host: 127.0.0.1:<port>`` and no ``Origin``. The content-type rule for ``POST /hooks``
is the receiver's own (``ingestd.http.hooks``). The functions here are pure; the
middleware reads only the request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web

from ingestd.errors import ConfigError
from ingestd.http.hooks import error_response
from ingestd.logs import get_logger
from ingestd.settings import LOOPBACK_HOSTS

log = get_logger("ingestd.http")

WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
HOST_CACHE = 64


@dataclass(frozen=True, slots=True)
class WebPolicy:
    """The names and origins the daemon answers to.

    Attributes:
        hosts: frozenset of str, lower-case host names (IPv6 without brackets) accepted in ``Host``.
        origins: frozenset of str, extra origins (``scheme://host[:port]``, lower-case) accepted in ``Origin``.
        port: int, the configured port; the port a request came in on is preferred when known.
    """

    hosts: frozenset[str]
    origins: frozenset[str]
    port: int


def split_list(raw: str | None) -> list[str]:
    """A comma-separated setting as its non-empty, stripped items."""
    return [item.strip() for item in (raw or "").split(",") if item.strip()]


def normalize_origin(raw: str) -> str | None:
    """``scheme://host[:port]`` lower-cased with the default port dropped, or None when not an origin."""
    try:
        u = urlsplit(raw.strip())
        port = u.port
    except ValueError:
        return None
    if u.scheme not in ("http", "https") or not u.hostname or u.path not in ("", "/") or u.query or u.fragment:
        return None
    if u.username is not None or u.password is not None:
        return None
    host = f"[{u.hostname}]" if ":" in u.hostname else u.hostname
    default = 80 if u.scheme == "http" else 443
    return f"{u.scheme}://{host}" + ("" if port in (None, default) else f":{port}")


def make_policy(bind_host: str, port: int, allowed_hosts: Iterable[str], allowed_origins: Iterable[str]) -> WebPolicy:
    """The policy for a daemon bound to ``bind_host:port`` with the two settings' items.

    Raises:
        ConfigError: an ``allowed_origins`` item is not ``scheme://host[:port]``.
    """
    hosts = set(LOOPBACK_HOSTS)
    bind = bind_host.strip().strip("[]").lower()
    if bind not in WILDCARD_BINDS:
        hosts.add(bind)
    hosts.update(h.strip().strip("[]").lower().rstrip(".") for h in allowed_hosts if h.strip())
    origins = set()
    for raw in allowed_origins:
        norm = normalize_origin(raw)
        if norm is None:
            raise ConfigError(
                f"allowed_origins: {raw!r} is not an origin; write scheme://host[:port], e.g. http://localhost:3000",
                setting="allowed_origins",
            )
        origins.add(norm)
    return WebPolicy(frozenset(hosts), frozenset(origins), port)


def host_name(header: str) -> str | None:
    """The host name of a ``Host`` header (lower-case, IPv6 without brackets), or None when malformed."""
    value = header.strip().lower()
    if not value or any(c in value for c in "/@?# \t"):
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
    else:
        name, _, port = value.partition(":")
        rest = ":" + port if _ else ""
    if rest and not (rest.startswith(":") and rest[1:].isdigit() and rest[1:].isascii()):
        return None
    return name or None


def host_ok(policy: WebPolicy, header: str | None) -> bool:
    """True when a ``Host`` header names the daemon (a request without one is refused too)."""
    if header is None:
        return False
    name = host_name(header)
    return name is not None and name in policy.hosts


def origin_ok(policy: WebPolicy, origin: str | None, port: int, host: str | None = None) -> bool:
    """True when there is no ``Origin``, it is the daemon's own, or it is allowlisted.

    The daemon's own: ``http://`` + one of its names + the port the request came in on, or exactly
    ``http://`` + the request's (already checked) ``Host``: a page the daemon served through a
    forwarded port (``ssh -L 9999:127.0.0.1:7391``) is same-origin with it as the browser sees it.
    """
    if origin is None:
        return True
    norm = normalize_origin(origin)
    if norm is None:  # "null", garbage
        return False
    if norm in policy.origins:
        return True
    if host is not None and norm == normalize_origin("http://" + host):
        return True
    u = urlsplit(norm)
    return u.scheme == "http" and (u.hostname or "") in policy.hosts and (u.port or 80) == port


def _local_port(request: web.Request, fallback: int) -> int:
    sock = request.transport.get_extra_info("sockname") if request.transport is not None else None
    if isinstance(sock, tuple) and len(sock) >= 2 and isinstance(sock[1], int):
        return sock[1]
    return fallback


def checker(policy: WebPolicy) -> Callable[[web.Request], web.Response | None]:
    """A function applying ``policy`` to one request: its refusal (421 foreign ``Host``, then 403
    foreign ``Origin``, each logged once as ``request_rejected``), or None when it may go on.

    The app's front middleware (``ingestd.http.app``) calls it on every request, before the token check.
    """

    # ``host_ok`` of the Host headers seen (a daemon hears one or two spellings; the cache stops
    # growing at HOST_CACHE entries, so a client sending endless names only costs the check).
    known: dict[str, bool] = {}

    def refusal(request: web.Request) -> web.Response | None:
        host = request.headers.get("Host")
        ok = known.get(host) if host is not None else False
        if ok is None and host is not None:
            ok = host_ok(policy, host)
            if len(known) < HOST_CACHE:
                known[host] = ok
        if not ok:
            log.warning("request_rejected", status=421, reason="foreign_host", path=request.path, host=host)
            return error_response(
                421,
                "misdirected_host",
                "this daemon does not answer to that Host; use 127.0.0.1 or localhost "
                "(or add the name to the allowed_hosts setting)",
            )
        origin = request.headers.get("Origin")
        # no Origin (Claude Code, ingestd.forward): nothing to compare, not even the local port
        if origin is not None and not origin_ok(policy, origin, _local_port(request, policy.port), host):
            log.warning("request_rejected", status=403, reason="foreign_origin", path=request.path, origin=origin)
            return error_response(
                403,
                "forbidden_origin",
                "requests from web pages of another origin are refused (add it to the allowed_origins setting)",
            )
        return None

    return refusal
