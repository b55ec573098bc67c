"""TLS for the webhook: one ``ssl.SSLContext`` whose certificate is swapped in place.

    TlsReloader(cert_file, key_file, ca_bundle=None, service_name=None, client_ca=None).context
                                                TLS 1.2+ server context
    TlsReloader.check() -> bool                 True when a new pair was loaded
    TlsReloader.mismatch                        "" or why the pair in force would be refused

``load_cert_chain`` on the live context affects new handshakes only, so rotation (e.g.
cert-manager renewing the Secret) needs no restart and drops no connection. A pair that
does not load (half-written files, a key that does not match, a file that is not regular or
is larger than ``webhook.reload.MAX_FILE_BYTES``) keeps the old one in force and is reported in
``error``. Change detection hashes both files' bytes, read once and bounded; the pair is loaded
from those bytes (an in-memory file), never from the paths again. Checks run in the reload
loop's worker thread; the live context is swapped on the event loop that serves it (the loop
running when the reloader was made), never concurrently with a handshake.

With ``ca_bundle`` (the registration's caBundle) or ``service_name`` (the host the API server
calls), every check, the first one included, verifies the certificate in force with
:func:`webhook.serving_check.check_serving_certificate`: chained to the bundle, inside its
validity window, covering the name. A pair that fails is still served (it is the newest the
operator gave, and refusing it would keep one that may be older still), but ``mismatch`` says
why in one line, logged once, and the webhook is not ready until it passes.

With ``client_ca`` (``--client-ca-file``), the context asks for a client certificate
(``ssl.CERT_OPTIONAL``) signed by one of that file's CAs, for the clientAuth usage: a caller that
presents another CA's fails the TLS handshake before any request is read; one that presents none
is answered 403 on the admission paths (``webhook/server.py``), while the probes and ``/metrics``
answer it (the kubelet's HTTPS probes present no certificate). The API server presents one through
its AdmissionConfiguration's ``kubeConfigFile``. The file is re-read with the
serving pair: a changed file's CAs are added to those in force (a CA removed from the file stays
trusted until the webhook restarts: OpenSSL offers no way to drop one from a live context); a file
that does not load is refused like a bad pair (``error``), the last good CAs stay in force.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import logging
import os
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path

from dra_bridge.webhook.errors import ConfigFileError, WebhookConfigError
from dra_bridge.webhook.reload import read_bounded
from dra_bridge.webhook.serving_check import check_serving_certificate

logger = logging.getLogger(__name__)
#: How long a check in a worker thread waits for the event loop to swap the pair in.
SWAP_TIMEOUT = 10.0


@contextlib.contextmanager
def _file_of(data: bytes, name: str, fallback: Path) -> Iterator[str]:
    """A path to ``data`` for ``load_cert_chain``, which reads only paths: an in-memory file
    (Linux memfd), or ``fallback`` where there is none."""
    if not hasattr(os, "memfd_create"):
        yield str(fallback)
        return
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


def _load_pair(context: ssl.SSLContext, cert: bytes, key: bytes, cert_file: Path, key_file: Path) -> None:
    with _file_of(cert, "tls.crt", cert_file) as c, _file_of(key, "tls.key", key_file) as k:
        context.load_cert_chain(c, k)


class TlsReloader:
    """See the module docstring. The first load happens in the constructor and raises WebhookConfigError."""

    def __init__(
        self,
        cert_file: Path,
        key_file: Path,
        ca_bundle: Path | None = None,
        service_name: str | None = None,
        client_ca: Path | None = None,
    ) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self.ca_bundle = ca_bundle
        self.service_name = service_name
        self.mismatch = ""
        self._served = b""
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.error = ""
        self.reloads = 0
        self.failures = 0
        self._digest = b""
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self.client_ca = client_ca
        self._client_ca_digest = b""
        self._client_ca_refused = ""
        if client_ca is not None:
            self.context.verify_mode = ssl.CERT_OPTIONAL  # none: 403 on the admission paths
            if not self._load_client_ca():
                raise WebhookConfigError(f"cannot load the client CA: {self.error}")
        if not self.check():
            raise WebhookConfigError(f"cannot load the serving certificate: {self.error}")

    def _load_client_ca(self) -> bool:
        """Add the client CA file's certificates when its bytes changed; False when it does not load."""
        if self.client_ca is None:
            return True
        try:
            pem = read_bounded(self.client_ca)
        except ConfigFileError as exc:
            return self._refuse(f"client CA {exc}")
        digest = hashlib.sha256(pem).digest()
        if digest == self._client_ca_digest:
            if self._client_ca_refused and not self.error:  # a new pair loaded since: still say it
                self.error = self._client_ca_refused
            return not self._client_ca_refused
        try:
            text = pem.decode("ascii")
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_verify_locations(cadata=text)  # proven first
            self._on_loop(lambda: self.context.load_verify_locations(cadata=text))
        except (ssl.SSLError, ValueError, TimeoutError) as exc:
            self._client_ca_digest = digest
            self._client_ca_refused = f"client CA {self.client_ca}: no PEM CA certificate loads ({exc})"
            return self._refuse(self._client_ca_refused)
        self._client_ca_digest = digest
        if self._client_ca_refused and self.error == self._client_ca_refused:
            self.error = ""  # fixed: the pair in force never changed
        self._client_ca_refused = ""
        logger.info("client CA %s loaded: callers must present a certificate it signed", self.client_ca)
        return True

    def check(self) -> bool:
        """Reload the pair if either file changed, then verify the one in force against the bundle
        and the name (when given); True when a new pair is in force."""
        loaded = self._load()
        self._load_client_ca()
        self._verify()
        return loaded

    def _verify(self) -> None:
        if (self.ca_bundle is None and not self.service_name) or not self._served:
            return
        problem, bundle = "", None
        if self.ca_bundle is not None:
            try:
                bundle = read_bounded(self.ca_bundle)
            except ConfigFileError as exc:
                problem = f"cannot read the CA bundle: {exc}"
        problem = problem or check_serving_certificate(
            self._served, bundle, self.service_name, datetime.datetime.now(datetime.UTC)
        )
        reason = (
            (
                f"serving certificate {self.cert_file} {problem} (CA bundle {self.ca_bundle or 'not checked'}, "
                f"service name {self.service_name or 'not checked'})"
            )
            if problem
            else ""
        )
        if reason and reason != self.mismatch:
            self.failures += 1
            logger.error("not ready: %s", reason)
        elif self.mismatch and not reason:
            logger.info("serving certificate %s matches the CA bundle and the service name again", self.cert_file)
        self.mismatch = reason

    def _on_loop(self, change: Callable[[], None]) -> None:
        """Run ``change`` (to the live context) on the loop that serves it when called from another thread."""
        loop = self._loop
        here = None
        with contextlib.suppress(RuntimeError):
            here = asyncio.get_running_loop()
        if loop is None or loop is here or not loop.is_running():
            change()
            return

        async def on_loop() -> None:
            change()

        asyncio.run_coroutine_threadsafe(on_loop(), loop).result(SWAP_TIMEOUT)

    def _load(self) -> bool:
        try:
            cert, key = read_bounded(self.cert_file), read_bounded(self.key_file)
        except ConfigFileError as exc:
            return self._refuse(str(exc))
        digest = hashlib.sha256(cert + b"\0" + key).digest()
        if digest == self._digest:
            return False
        try:
            # Prove the pair in a scratch context first: a failed load on the live context
            # could leave a certificate in it without its key.
            _load_pair(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), cert, key, self.cert_file, self.key_file)
            self._on_loop(lambda: _load_pair(self.context, cert, key, self.cert_file, self.key_file))
        except (ssl.SSLError, OSError, TimeoutError) as exc:
            self._digest = digest
            return self._refuse(f"{self.cert_file} / {self.key_file}: {exc}")
        self._digest = digest
        self._served = cert
        self.error = ""
        self.reloads += 1
        logger.info("serving certificate %s (load %d)", self.cert_file, self.reloads)
        return True

    def _refuse(self, reason: str) -> bool:
        if reason != self.error:
            self.failures += 1
            if self._served:  # at start nothing is in force: the caller's WebhookConfigError says it
                logger.error("TLS pair refused: %s (keeping the previous one)", reason)
        self.error = reason
        return False
