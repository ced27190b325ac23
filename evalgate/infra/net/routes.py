"""Where requests go: proxies (`HTTPS_PROXY`, `NO_PROXY`, ... as curl reads them) and TLS (CA bundles,
client certificates) from the settings and the environment."""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalgate.errors import not_a_file
from evalgate.infra.net.errors import exception_summary

if TYPE_CHECKING:  # loaded with the first https origin
    import ssl


def environ_proxies(environ: Mapping[str, str]) -> dict[str, str]:
    """`{scheme: proxy URL, "no": NO_PROXY}` from `<scheme>_proxy` variables, lowercase winning, as
    the standard library's `getproxies_environment` reads them (HTTP_PROXY ignored under CGI)."""
    proxies: dict[str, str] = {}
    for name, value in environ.items():
        lower = name.lower()
        if value and lower.endswith("_proxy"):
            proxies[lower[:-6]] = value
    if "REQUEST_METHOD" in environ:
        proxies.pop("http", None)
    for name, value in environ.items():
        if name.endswith("_proxy"):
            if value:
                proxies[name[:-6].lower()] = value
            else:
                proxies.pop(name[:-6].lower(), None)
    return proxies


def bypasses_proxy(host: str, port: int, no_proxy: str) -> bool:
    """NO_PROXY: `*`, host names and domain suffixes (`.corp.example`, `corp.example`), `host:port`,
    and IP networks (`10.0.0.0/8`), as curl and requests read it."""
    import urllib.request  # the standard library's matching of names and suffixes

    if not no_proxy.strip():
        return False
    # typeshed leaves out this undocumented (and long stable) function
    if urllib.request.proxy_bypass_environment(f"{host}:{port}", {"no": no_proxy}):  # type: ignore[attr-defined]
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    for entry in no_proxy.split(","):
        entry = entry.strip()
        if "/" in entry:
            with contextlib.suppress(ValueError):
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
    return False


def proxy_for(scheme: str, host: str, port: int, environ: Mapping[str, str]) -> str | None:
    """The proxy URL a request to this origin goes through, or None for a direct connection."""
    proxies = environ_proxies(environ)
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy or bypasses_proxy(host, port, proxies.get("no", "")):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


CA_BUNDLE_ENV = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")


@dataclass(frozen=True)
class TlsOptions:
    """How to verify servers and who to be: a CA bundle (PEM) replacing the system store, and a
    client certificate (PEM; the key in `client_key` or in the same file)."""

    ca_bundle: str | None = None
    client_cert: str | None = None
    client_key: str | None = None

    def resolved(self, base_dir: Path | None = None) -> TlsOptions:
        """Relative paths resolved against `base_dir` (the spec's folder)."""
        if base_dir is None:
            return self

        def place(value: str | None) -> str | None:
            if value is None:
                return None
            path = Path(value).expanduser()
            return str(path if path.is_absolute() else base_dir / path)

        return TlsOptions(place(self.ca_bundle), place(self.client_cert), place(self.client_key))


def tls_from_settings(settings: Any, base_dir: Path | None = None) -> TlsOptions:
    """TlsOptions from spec settings (`ca_bundle`, `client_cert`, `client_key`); empty if None."""
    if settings is None:
        return TlsOptions()
    return TlsOptions(settings.ca_bundle, settings.client_cert, settings.client_key).resolved(base_dir)


class TlsSettingError(ValueError):
    """A CA bundle or client certificate that cannot be used; the message names its setting."""


def ca_source(tls: TlsOptions, environ: Mapping[str, str]) -> tuple[str, str | None]:
    """(where the CA bundle comes from, its path): the spec's setting, else the first `CA_BUNDLE_ENV`
    variable set, else (`tls.ca_bundle`, None) for the system store."""
    if tls.ca_bundle is None:
        for name in CA_BUNDLE_ENV:
            if environ.get(name):
                return name, environ[name]
    return "tls.ca_bundle", tls.ca_bundle


def ssl_context(tls: TlsOptions, environ: Mapping[str, str]) -> ssl.SSLContext:
    """A verifying client context; ValueError naming the setting when a file cannot be used."""
    import ssl

    source, cafile = ca_source(tls, environ)
    # OpenSSL reads a FIFO until a writer comes and closes it: for ever, in a CI job
    for setting, file in ((source, cafile), ("tls.client_cert", tls.client_cert), ("tls.client_key", tls.client_key)):
        unusable = not_a_file(Path(file), what=setting) if file is not None and not os.path.isdir(file) else None
        if unusable is not None:
            raise TlsSettingError(f"{setting} {file}: {unusable}")
    try:
        if cafile is not None and os.path.isdir(cafile):
            context = ssl.create_default_context(capath=cafile)
        else:
            context = ssl.create_default_context(cafile=cafile)
    except (OSError, ssl.SSLError) as exc:
        raise TlsSettingError(f"{source} {cafile}: not a readable PEM CA bundle ({exception_summary(exc)})") from None
    if tls.client_cert is not None:
        try:
            context.load_cert_chain(tls.client_cert, tls.client_key)
        except (OSError, ssl.SSLError) as exc:
            why = exception_summary(exc)
            raise TlsSettingError(f"tls.client_cert {tls.client_cert}: cannot be loaded ({why})") from None
    return context
