"""Authentication plugins of the connection phase. No I/O.

Each plugin is a small object driven by the registration state machine:
``start(scramble)`` returns the first response (sent in HandshakeResponse41 or
after an auth switch), ``more_data(data)`` answers an AuthMoreData packet
(its 0x01 marker already removed) and returns the bytes to send, or ``None``
when the plugin only waits for the server's OK/ERR.

The password is held as bytes by the plugin and never appears in its repr or
in any error message. Scrambles for ``mysql_native_password``,
``client_ed25519`` and the SHA-2 plugins come from PyMySQL's helpers; RSA and
the parsec signature use ``cryptography``. Randomness (the parsec client nonce)
is injected so that tests are deterministic.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import ClassVar, Final

from pymysql import _auth as pymysql_auth

from ..errors import ProtocolError, UnsupportedError
from .constants import AuthSwitch

__all__ = [
    "AUTH_PLUGINS",
    "AuthPlugin",
    "CachingSha2Password",
    "ClearPassword",
    "Ed25519Password",
    "NativePassword",
    "ParsecPassword",
    "RandomBytes",
    "Sha256Password",
    "plugin_for",
    "scramble_native",
]

RandomBytes = Callable[[int], bytes]

_NATIVE_SCRAMBLE_LEN: Final = 20
_ED25519_SCRAMBLE_LEN: Final = 32
_PARSEC_NONCE_LEN: Final = 32
_PARSEC_MAX_FACTOR: Final = 3  # iterations = 1024 << factor, the server allows up to 3


def scramble_native(password: bytes, scramble: bytes) -> bytes:
    """mysql_native_password: ``SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw)))``."""
    if not password:
        return b""
    result: bytes = pymysql_auth.scramble_native_password(password, scramble[:_NATIVE_SCRAMBLE_LEN])
    return result


class AuthPlugin:
    """Base class: one instance per authentication exchange."""

    name: ClassVar[str] = ""

    __slots__ = ("_password", "_random", "_scramble", "_server_public_key", "_stepped", "_tls")

    def __init__(
        self,
        password: bytes,
        *,
        tls: bool,
        random_bytes: RandomBytes = os.urandom,
        server_public_key: bytes | None = None,
    ) -> None:
        self._password = password
        self._tls = tls
        self._random = random_bytes
        self._server_public_key = server_public_key
        self._scramble = b""
        #: Whether a two-step AuthMoreData exchange has taken its second step
        #: (caching_sha2_password: the public key was asked for; parsec: the
        #: signature was sent). The one-step plugins never set it.
        self._stepped = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} plugin={self.name!r} tls={self._tls}>"

    def start(self, scramble: bytes) -> bytes:
        """Remember the server's scramble and return the first response."""
        self._scramble = scramble
        return self._first_response()

    def _first_response(self) -> bytes:
        raise NotImplementedError

    def more_data(self, data: bytes) -> bytes | None:
        """Answer an AuthMoreData packet; ``None`` means: nothing to send, wait."""
        raise ProtocolError(f"unexpected AuthMoreData packet during {self.name} authentication")

    def _rsa_encrypt(self, pem: bytes) -> bytes:
        try:
            encrypted: bytes = pymysql_auth.sha2_rsa_encrypt(
                self._password, self._scramble[:_NATIVE_SCRAMBLE_LEN], pem
            )
        except ValueError as exc:  # not a PEM public key
            raise ProtocolError(f"{self.name}: the server sent an unusable RSA public key") from exc
        return encrypted

    def _cleartext(self) -> bytes:
        return self._password + b"\0"


class NativePassword(AuthPlugin):
    """``mysql_native_password``: one SHA-1 based response."""

    name = "mysql_native_password"
    __slots__ = ()

    def _first_response(self) -> bytes:
        return scramble_native(self._password, self._scramble)


class Ed25519Password(AuthPlugin):
    """MariaDB ``client_ed25519``: an Ed25519 signature of the 32-byte scramble."""

    name = "client_ed25519"
    __slots__ = ()

    def _first_response(self) -> bytes:
        signature: bytes = pymysql_auth.ed25519_password(
            self._password, self._scramble[:_ED25519_SCRAMBLE_LEN]
        )
        return signature


class ClearPassword(AuthPlugin):
    """``mysql_clear_password``: the password itself, so only over TLS."""

    name = "mysql_clear_password"
    __slots__ = ()

    def _first_response(self) -> bytes:
        if not self._tls:
            raise UnsupportedError(
                "the server asked for mysql_clear_password, which would send the password "
                "in clear text; refusing without TLS (enable TLS in the replica config)"
            )
        return self._cleartext()


class Sha256Password(AuthPlugin):
    """MySQL ``sha256_password``: cleartext over TLS, else RSA-encrypted with the server key."""

    name = "sha256_password"
    __slots__ = ()

    def _first_response(self) -> bytes:
        if self._tls:
            return self._cleartext()
        if not self._password:
            return b"\0"
        if self._server_public_key is not None:
            return self._rsa_encrypt(self._server_public_key)
        return bytes((AuthSwitch.SHA256_REQUEST_PUBLIC_KEY,))

    def more_data(self, data: bytes) -> bytes | None:
        return self._rsa_encrypt(data)  # the public key we asked for


class CachingSha2Password(AuthPlugin):
    """MySQL ``caching_sha2_password``: fast scramble, full auth on a cache miss."""

    name = "caching_sha2_password"
    __slots__ = ()

    def _first_response(self) -> bytes:
        if not self._password:
            return b""
        scrambled: bytes = pymysql_auth.scramble_caching_sha2(
            self._password, self._scramble[:_NATIVE_SCRAMBLE_LEN]
        )
        return scrambled

    def more_data(self, data: bytes) -> bytes | None:
        if self._stepped:
            return self._rsa_encrypt(data)
        if data == bytes((AuthSwitch.FAST_AUTH_SUCCESS,)):
            return None  # the OK packet follows
        if data != bytes((AuthSwitch.PERFORM_FULL_AUTH,)):
            raise ProtocolError("caching_sha2_password: unexpected AuthMoreData contents")
        if self._tls:
            return self._cleartext()
        if self._server_public_key is not None:
            return self._rsa_encrypt(self._server_public_key)
        self._stepped = True
        return bytes((AuthSwitch.REQUEST_PUBLIC_KEY,))


class ParsecPassword(AuthPlugin):
    """MariaDB ``parsec`` (11.6+): PBKDF2-derived Ed25519 key signs both nonces.

    Exchange (KB "Authentication Plugin - PARSEC"): the server's auth switch
    carries a 32-byte nonce; we send an empty packet; the server answers with
    the ext-salt ``'P' | iteration factor u8 | salt``; we derive
    ``PBKDF2-HMAC-SHA512(password, salt, 1024 << factor, 32)``, use it as an
    Ed25519 private key, and send ``client_nonce[32] | sign(server_nonce +
    client_nonce)[64]``.
    """

    name = "parsec"
    __slots__ = ()

    def _first_response(self) -> bytes:
        return b""  # asks for the ext-salt

    def more_data(self, data: bytes) -> bytes | None:
        if self._stepped:
            raise ProtocolError("parsec: unexpected second AuthMoreData packet")
        if len(data) < 3 or data[0] != ord("P") or data[1] > _PARSEC_MAX_FACTOR:
            raise ProtocolError("parsec: malformed ext-salt from the server")
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        iterations = 1024 << data[1]
        seed = hashlib.pbkdf2_hmac("sha512", self._password, data[2:], iterations, 32)
        nonce = self._random(_PARSEC_NONCE_LEN)
        key = Ed25519PrivateKey.from_private_bytes(seed)
        signature = key.sign(self._scramble[:_ED25519_SCRAMBLE_LEN] + nonce)
        self._stepped = True
        return nonce + signature


AUTH_PLUGINS: Final[dict[str, type[AuthPlugin]]] = {
    cls.name: cls
    for cls in (
        NativePassword,
        Ed25519Password,
        ClearPassword,
        Sha256Password,
        CachingSha2Password,
        ParsecPassword,
    )
}


def plugin_for(
    name: str,
    password: bytes,
    *,
    tls: bool,
    random_bytes: RandomBytes = os.urandom,
    server_public_key: bytes | None = None,
) -> AuthPlugin:
    """The plugin object for the server's plugin ``name``.

    Raises:
        UnsupportedError: a plugin this client does not implement.
    """
    cls = AUTH_PLUGINS.get(name)
    if cls is None:
        raise UnsupportedError(
            f"authentication plugin {name!r} is not supported "
            f"(supported: {', '.join(sorted(AUTH_PLUGINS))})"
        )
    return cls(password, tls=tls, random_bytes=random_bytes, server_public_key=server_public_key)
