"""TLS for the webhook: one ``ssl.SSLContext`` whose certificate is swapped in place.

    TlsReloader(cert_file, key_file).context   TLS 1.2+ server context
    TlsReloader.check() -> bool                 True when a new pair was loaded

``load_cert_chain`` on the live context affects new handshakes only, so rotation (e.g.
cert-manager renewing the Secret) needs no restart and drops no connection. A pair that
does not load (half-written files, a key that does not match) keeps the old one in force
and is reported in ``error``. Change detection hashes both files' bytes.
"""

from __future__ import annotations

import hashlib
import logging
import ssl
from pathlib import Path

from dra_bridge.webhook.errors import ConfigError

logger = logging.getLogger(__name__)


class TlsReloader:
    """See the module docstring. The first load happens in the constructor and raises ConfigError."""

    def __init__(self, cert_file: Path, key_file: Path) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.error = ""
        self.reloads = 0
        self.failures = 0
        self._digest = b""
        if not self.check():
            raise ConfigError(f"cannot load the serving certificate: {self.error}")

    def check(self) -> bool:
        """Reload the pair if either file changed; True when a new pair is in force."""
        try:
            digest = hashlib.sha256(self.cert_file.read_bytes() + b"\0" + self.key_file.read_bytes()).digest()
        except OSError as exc:
            return self._refuse(f"cannot read {exc.filename}: {exc.strerror}")
        if digest == self._digest:
            return False
        try:
            # Prove the pair in a scratch context first: a failed load on the live context
            # could leave a certificate in it without its key.
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(str(self.cert_file), str(self.key_file))
            self.context.load_cert_chain(str(self.cert_file), str(self.key_file))
        except (ssl.SSLError, OSError) as exc:
            self._digest = digest
            return self._refuse(f"{self.cert_file} / {self.key_file}: {exc}")
        self._digest = digest
        self.error = ""
        self.reloads += 1
        logger.info("serving certificate %s (load %d)", self.cert_file, self.reloads)
        return True

    def _refuse(self, reason: str) -> bool:
        if reason != self.error:
            self.failures += 1
            logger.error("TLS pair refused: %s (keeping the previous one)", reason)
        self.error = reason
        return False
