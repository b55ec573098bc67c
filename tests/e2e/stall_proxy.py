"""A loopback HTTPS proxy in front of the real API server that never answers one kind of request.

It stands in for a network fault, not for the API: every request (head and a Content-Length
body) is forwarded unchanged to the real kube-apiserver over a new upstream TLS connection,
with ``Connection: close`` so each client connection carries exactly one request, and the
answer is copied back until the server closes, except those
whose request line ``stall(method, target)`` selects: the proxy reads them and then holds the
connection open, silent, until :meth:`StallingProxy.stop`. The client authenticates with a
bearer token (forwarded in its headers); the proxy's own serving certificate comes from the
caller. Bounded: at most ``max_connections`` connections in all, loopback only, every socket
closed on stop.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path

HEAD_LIMIT = 64 * 1024


class StallingProxy:
    """See the module docstring. ``upstream``: the API server's https URL; ``upstream_ca``: its CA."""

    def __init__(
        self,
        upstream: str,
        upstream_ca: Path,
        cert: Path,
        key: Path,
        stall: Callable[[str, str], bool],
        max_connections: int = 400,
    ) -> None:
        url = urllib.parse.urlsplit(upstream)
        self._upstream = (url.hostname or "127.0.0.1", url.port or 443)
        self._client_ctx = ssl.create_default_context(cafile=str(upstream_ca))
        self._server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._server_ctx.load_cert_chain(str(cert), str(key))
        self._server_ctx.set_alpn_protocols(["http/1.1"])
        self._stall = stall
        self._budget = max_connections
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.stalled: list[str] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = int(self._listener.getsockname()[1])
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """The proxy's https URL (for a kubeconfig whose CA is the proxy certificate's)."""
        return f"https://127.0.0.1:{self.port}"

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)

    def _accept(self) -> None:
        while not self._stop.is_set() and self._budget > 0:
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._budget -= 1
            self._track(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            raw.settimeout(10)
            client = self._server_ctx.wrap_socket(raw, server_side=True)
            self._track(client)
            data = b""
            while b"\r\n\r\n" not in data and len(data) < HEAD_LIMIT:
                chunk = client.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            method, target, _version = lines[0].decode("latin-1").split(" ", 2)
            if self._stall(method, target):
                self.stalled.append(f"{method} {target}")
                self._stop.wait()
                return
            headers = [h for h in lines[1:] if not h.lower().startswith((b"connection:", b"keep-alive:"))]
            length = next((int(h.split(b":", 1)[1]) for h in headers if h.lower().startswith(b"content-length:")), 0)
            while len(rest) < length:  # the whole body first: then only the answer flows (one thread per socket)
                chunk = client.recv(65536)
                if not chunk:
                    return
                rest += chunk
            upstream = self._client_ctx.wrap_socket(
                socket.create_connection(self._upstream, timeout=10), server_hostname=self._upstream[0]
            )
            self._track(upstream)
            client.settimeout(None)
            upstream.settimeout(None)
            upstream.sendall(b"\r\n".join([lines[0], *headers, b"Connection: close"]) + b"\r\n\r\n" + rest)
            self._pipe(upstream, client)
        except (OSError, ValueError):
            pass
        finally:
            raw.close()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        """Release every stalled request (by closing it) and every connection; stop accepting."""
        self._stop.set()
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        self._thread.join(2)
