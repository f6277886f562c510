"""A real HTTPS server on loopback that records what chat webhooks (Teams Workflows through apprise) post to it.

apprise's ``workflows://`` plugin speaks HTTPS only, so the server has a self-signed certificate made here with
``cryptography``; the budget's URL carries ``verify=no``. ``fail_next`` makes it answer 500 to test retries.
"""

from __future__ import annotations

import datetime
import json
import ssl
import tempfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def self_signed_cert(directory: Path) -> tuple[Path, Path]:
    """A certificate and key for 127.0.0.1, valid for a day."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@dataclass
class ChatWebhookServer:
    """The server's port, the posts it received (path, query, JSON body) and how many to refuse next."""

    port: int = 0
    posts: list[dict[str, Any]] = field(default_factory=list)
    fail_next: int = 0

    def workflows_url(self) -> str:
        """The apprise URL of a Teams Workflows webhook on this server."""
        return f"workflows://127.0.0.1:{self.port}/budgetflow/SIGNATURE123/?verify=no"


def start_chat_webhook_server() -> tuple[ChatWebhookServer, ThreadingHTTPServer]:
    """Start the server in a thread; the caller shuts it down."""
    state = ChatWebhookServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            path, _, query = self.path.partition("?")
            if state.fail_next > 0:
                state.fail_next -= 1
                self.send_response(500)
                self.end_headers()
                return
            state.posts.append({"path": path, "query": query, "body": json.loads(raw or b"{}")})
            self.send_response(202)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = self_signed_cert(Path(tmp))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    state.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return state, server
