"""Security: TLS verification modes against a generated CA, a certificate for
the wrong host name and an unrelated CA; the password never shows up in repr,
str, log records or error messages, even through reconnects.

(Clear-text password auth without TLS is refused in tests/wire/test_auth.py;
GTID states and file names are validated before they reach SQL in
tests/wire/test_registration.py::test_settings_validation.)
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import replica_client as rc
from replica_client.binlog.events import GtidEvent
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant
from tests.faults.proxy import ConnectionPlan, FaultProxy
from tests.integration._stream_support import REPL_USER, config_for, repl_user

__all__: list[str] = []

pytestmark = pytest.mark.integration

SECRET = "Sekr1t-pw-never-shown"


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _ca(directory: Path, name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "ca.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert, key


def _leaf(
    directory: Path, ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, dns: str
) -> None:
    """server-cert.pem / server-key.pem for ``dns`` only (no IP, not localhost)."""
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns)]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(dns)]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (directory / "server-cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "server-key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )


async def _open_close(cfg: rc.ReplicaConfig) -> None:
    async with rc.connect(cfg) as stream:
        async for _ in stream:
            pass


async def test_tls_verify_modes_with_the_harness_ca(
    mariadb_primary_factory: PrimaryFactory,
) -> None:
    srv = mariadb_primary_factory(ServerVariant(tls=True))
    repl_user(srv)
    # The server refuses this account on any connection that is not encrypted, so
    # each successful stream below ran over TLS.
    for host in ("%", "localhost"):
        srv.sql(f"ALTER USER '{REPL_USER}'@'{host}' REQUIRE SSL")
    try:
        with pytest.raises(rc.AuthenticationError):
            await rc.connect(config_for(srv, start="now", blocking=False, tls="off"))
        ca = str(srv.ca_cert)
        for mode in ("required", "verify_ca", "verify_identity"):
            await _open_close(config_for(srv, start="now", blocking=False, tls=mode, tls_ca=ca))
        # the certificate names 127.0.0.1 and localhost
        await _open_close(
            config_for(
                srv, host="localhost", start="now", blocking=False, tls="verify_identity", tls_ca=ca
            )
        )
    finally:
        for host in ("%", "localhost"):
            srv.sql(f"ALTER USER '{REPL_USER}'@'{host}' REQUIRE NONE")


async def test_tls_wrong_hostname_and_unknown_ca(tmp_path: Path) -> None:
    tls = tmp_path / "server" / "tls"
    ca, ca_key = _ca(tls, "rc test CA for a wrong host name")
    _leaf(tls, ca, ca_key, "db.wrong-host.invalid")
    other = tmp_path / "other"
    _ca(other, "an unrelated CA")
    ip = ipaddress.ip_address("127.0.0.1")
    with MariaDBServer(ServerVariant(tls=True), base_dir=tmp_path / "server") as srv:
        assert srv.ca_cert == tls / "ca.pem"  # our files, not regenerated
        repl_user(srv)
        base = {"start": "now", "blocking": False}
        # the chain is fine: verify_ca and required connect
        await _open_close(config_for(srv, tls="verify_ca", tls_ca=str(srv.ca_cert), **base))
        await _open_close(config_for(srv, tls="required", **base))
        # verify_identity: the certificate is for another host
        with pytest.raises(rc.ConnectionLostError, match="TLS handshake") as info:
            await rc.connect(
                config_for(srv, tls="verify_identity", tls_ca=str(srv.ca_cert), **base)
            )
        assert str(ip) in str(info.value.__cause__) or "match" in str(info.value.__cause__)
        # a CA that did not sign it: refused in both verifying modes
        for mode in ("verify_ca", "verify_identity"):
            with pytest.raises(rc.ConnectionLostError, match="certificate verify failed"):
                await rc.connect(config_for(srv, tls=mode, tls_ca=str(other / "ca.pem"), **base))


async def test_password_never_shown(
    mariadb_primary: MariaDBServer, caplog: pytest.LogCaptureFixture
) -> None:
    srv = mariadb_primary
    srv.create_user("rc_secret", SECRET)
    caplog.set_level(logging.DEBUG)
    shown: list[str] = []
    cfg = config_for(srv, user="rc_secret", password=SECRET, start="now", blocking=True)
    shown += [repr(cfg), str(cfg), repr(cfg.registration_settings())]
    # through a proxy that cuts the first reconnections: reconnect logs too
    # (connection 0 reads the tables' definitions, 1 streams)
    cuts = {2: 40, 3: 300}
    async with FaultProxy(srv.port, plan=lambda i: ConnectionPlan(cut_after=cuts.get(i))) as proxy:
        cfg = config_for(
            srv,
            user="rc_secret",
            password=SECRET,
            port=proxy.port,
            start="now",
            reconnect=rc.ReconnectPolicy(initial_delay=0.01),
        )
        async with rc.connect(cfg) as stream:
            shown += [repr(stream), repr(stream.session), repr(stream.session.machine)]  # type: ignore[union-attr]
            proxy.cut_all()
            srv.sql("CREATE DATABASE IF NOT EXISTS rc_secret_db")
            async for event in stream:
                if isinstance(event, GtidEvent):
                    break
            assert proxy.stats.cuts >= 3
    for wrong in (SECRET + "x", SECRET[:-1]):
        with pytest.raises(rc.AuthenticationError) as info:
            await rc.connect(config_for(srv, user="rc_secret", password=wrong))
        shown += [str(info.value), repr(info.value)]
        assert wrong not in str(info.value)
    shown += [r.getMessage() for r in caplog.records]
    shown.append(caplog.text)
    assert any("reconnect" in s for s in shown)  # the logs were captured
    for text in shown:
        assert SECRET not in text
        assert SECRET[:-1] not in text
