"""Encrypted MariaDB binlog files (``encrypt_binlog=ON``). No I/O: bytes in, bytes out.

Contract: :func:`parse_key_file` turns the contents of a ``file_key_management`` key
file (plain or OpenSSL-encrypted; the caller reads the file) into ``{key_id: key}``;
:func:`parse_start_encryption` reads the START_ENCRYPTION_EVENT body;
:class:`BinlogDecryptor` turns one encrypted event, as stored in the file, into the
plaintext event bytes. A missing or wrong key, or a bad key file, raises
:class:`~replica_client.errors.DecryptionError` -- never garbage.

How the server does it (MariaDB ``sql/log_event_server.cc``
``Log_event_writer::write_header`` / ``encrypt_and_write`` /
``maybe_write_event_len`` / ``write_footer``, ``sql/log_event.cc``
``Log_event::read_log_event`` and ``Start_encryption_log_event``,
``mysys_ssl/my_crypt.cc`` ``MyCTX_nopad``, ``plugin/file_key_management``):

* The FORMAT_DESCRIPTION_EVENT and the START_ENCRYPTION_EVENT right after it are
  plain. Every later event in the file is encrypted whole -- header, body and CRC32
  trailer -- except the 4-byte ``event_length`` field, which stays readable so the
  file can be walked.
* Before encrypting, the server copies the 4 timestamp bytes over the length field
  (offset 9) and encrypts bytes ``4..end``; the ciphertext's bytes 5..8 then go to
  the file's offset 0 and the plain length is stored at offset 9. Reading reverses
  that: copy bytes 0..3 to offset 9, decrypt from offset 4, move plaintext bytes
  9..12 back to offset 0, store the length at offset 9.
* Cipher: AES with the key's length (16/24/32 bytes), no padding, IV = 12-byte nonce
  from START_ENCRYPTION + the event's file offset as little-endian u32.
  ``file_key_management_encryption_algorithm=AES_CBC`` (the default) is CBC over the
  whole 16-byte blocks, and the last partial block is XORed with AES-ECB(key, IV) --
  the *original* IV (``MyCTX_nopad::finish``); ``AES_CTR`` is plain CTR mode. The
  binlog does not record which one was used; ``algorithm="auto"`` finds out on the
  first event and sticks to it.
* Key: encryption key id 1 (``ENCRYPTION_KEY_SYSTEM_DATA``) at the key version from
  START_ENCRYPTION. file_key_management has no key rotation: it only knows version 1
  and answers every other version with "no such key".
* The CRC32 is computed over the *plaintext* event (with the real timestamp and
  length in place), so after decryption it verifies like any other event; we use it
  (or, without checksums, the header's ``log_pos``) to tell a wrong key from a right
  one.

Over the network nothing of this is visible: the primary decrypts its files before
sending events to a replica.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from replica_client.errors import DecryptionError

__all__ = [
    "BINLOG_NONCE_LENGTH",
    "START_ENCRYPTION_EVENT",
    "SYSTEM_KEY_ID",
    "BinlogDecryptor",
    "StartEncryption",
    "parse_key_file",
    "parse_start_encryption",
]

START_ENCRYPTION_EVENT: Final = 164
BINLOG_NONCE_LENGTH: Final = 12
#: ``ENCRYPTION_KEY_SYSTEM_DATA``: the key id the binlog is always encrypted with.
SYSTEM_KEY_ID: Final = 1

_HEADER_LEN: Final = 19
_LEN_OFFSET: Final = 9
_CRC_LEN: Final = 4
_BLOCK: Final = 16
_START_ENCRYPTION: Final = struct.Struct("<BI12s")  # scheme, key version, nonce
_U32: Final = struct.Struct("<I")
_EVENT_HEADER: Final = struct.Struct("<IBIIIH")
_MAX_EVENT_TYPE: Final = 171

_MAX_KEY_FILE_SIZE: Final = 1024 * 1024
_OPENSSL_MAGIC: Final = b"Salted__"
_OPENSSL_SALT_LEN: Final = 8
_OPENSSL_KEY_LEN: Final = 32
_OPENSSL_IV_LEN: Final = 16
_DIGESTS: Final = ("sha1", "sha224", "sha256", "sha384", "sha512")
_SPACE: Final = frozenset(b" \t\n\v\f\r")
_DIGITS: Final = frozenset(b"0123456789")
_HEXDIGITS: Final = frozenset(b"0123456789abcdefABCDEF")


# -- START_ENCRYPTION_EVENT -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StartEncryption:
    """The START_ENCRYPTION_EVENT body (scheme 1 = the only one: AES, key id 1)."""

    scheme: int
    key_version: int
    nonce: bytes


def parse_start_encryption(body: bytes | bytearray | memoryview) -> StartEncryption:
    """Parse a START_ENCRYPTION_EVENT body (after the 19-byte header, without CRC).

    Byte layout (MariaDB ``Start_encryption_log_event``; KB "START_ENCRYPTION_EVENT")::

        crypto_scheme:u8  key_version:u32le  nonce:12 bytes
    """
    if len(body) < _START_ENCRYPTION.size:
        raise DecryptionError(
            f"START_ENCRYPTION_EVENT body has {len(body)} bytes, expected {_START_ENCRYPTION.size}"
        )
    scheme, key_version, nonce = _START_ENCRYPTION.unpack_from(body, 0)
    if scheme != 1:
        raise DecryptionError(f"unknown binlog encryption scheme {scheme} (only 1 exists)")
    return StartEncryption(scheme, key_version, bytes(nonce))


# -- key files ----------------------------------------------------------------------------


def _openssl_key_iv(password: bytes, salt: bytes, digest: str, iterations: int) -> bytes:
    """Key + IV (48 bytes) as ``openssl enc -md <digest> [-pbkdf2 -iter N]`` derives them."""
    need = _OPENSSL_KEY_LEN + _OPENSSL_IV_LEN
    if iterations:
        return hashlib.pbkdf2_hmac(digest, password, salt, iterations, need)
    # EVP_BytesToKey with count 1: D1 = H(pass + salt), Di = H(Di-1 + pass + salt)
    out = b""
    block = b""
    while len(out) < need:
        block = hashlib.new(digest, block + password + salt).digest()
        out += block
    return out[:need]


def _decrypt_key_file(data: bytes, password: str, digest: str, iterations: int) -> bytes:
    if len(data) < len(_OPENSSL_MAGIC) + _OPENSSL_SALT_LEN:
        raise DecryptionError("encrypted key file is too short to hold its salt")
    salt = data[len(_OPENSSL_MAGIC) : len(_OPENSSL_MAGIC) + _OPENSSL_SALT_LEN]
    body = data[len(_OPENSSL_MAGIC) + _OPENSSL_SALT_LEN :]
    material = _openssl_key_iv(password.encode(), salt, digest, iterations)
    key, iv = material[:_OPENSSL_KEY_LEN], material[_OPENSSL_KEY_LEN:]
    if not body or len(body) % _BLOCK:
        raise DecryptionError("encrypted key file is not a whole number of AES blocks")
    decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    padded = decryptor.update(body) + decryptor.finalize()
    unpadder = padding.PKCS7(_BLOCK * 8).unpadder()
    try:
        return unpadder.update(padded) + unpadder.finalize()
    except ValueError:
        raise DecryptionError(
            "cannot decrypt the key file: wrong password (or wrong digest / PBKDF2 iteration count)"
        ) from None


def parse_key_file(
    data: bytes | str,
    password: str | None = None,
    *,
    digest: str = "sha1",
    pbkdf2_iterations: int = 0,
) -> dict[int, bytes]:
    """Parse a ``file_key_management`` key file's contents into ``{key_id: key}``.

    Plain format (``plugin/file_key_management/parser.cc`` ``Parser::parse_line``)::

        # comment lines and blank lines are skipped
        <id>;<hex key>        id 1..2^32-1, key of 16, 24 or 32 bytes (32/48/64 hex digits)

    Leading blanks are allowed, no blank between the id and ``;`` or inside the
    key; anything after the key that is not a hex digit is ignored up to the line
    end; a later line with the same id wins. Key id 1 must be present.

    Encrypted form: ``openssl enc -aes-256-cbc -md sha1 -pass pass:SECRET`` output
    (``Salted__`` + 8-byte salt + AES-256-CBC/PKCS#7), decrypted with ``password``
    (the server's ``file_key_management_filekey``). The key and IV come from
    EVP_BytesToKey with one round of ``digest`` (``file_key_management_digest``,
    default sha1), or from PBKDF2 when ``pbkdf2_iterations`` is not 0
    (``file_key_management_use_pbkdf2`` = ``openssl enc -pbkdf2 -iter N``).
    """
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > _MAX_KEY_FILE_SIZE:
        raise DecryptionError(f"key file is larger than {_MAX_KEY_FILE_SIZE} bytes")
    if digest not in _DIGESTS:
        raise DecryptionError(f"unknown key file digest {digest!r}; one of {_DIGESTS}")
    if pbkdf2_iterations < 0:
        raise DecryptionError("pbkdf2_iterations must be >= 0")
    if len(raw) > len(_OPENSSL_MAGIC) and raw.startswith(_OPENSSL_MAGIC):
        if not password:
            raise DecryptionError(
                "the key file is encrypted (OpenSSL 'Salted__' format); give its password"
            )
        raw = _decrypt_key_file(raw, password, digest, pbkdf2_iterations)
    elif password:
        raise DecryptionError("a key file password was given but the key file is not encrypted")
    nul = raw.find(b"\0")
    if nul >= 0:  # the server reads the buffer as a C string
        raw = raw[:nul]

    keys: dict[int, bytes] = {}
    for line_no, line in enumerate(raw.split(b"\n"), start=1):
        parsed = _parse_key_line(line, line_no)
        if parsed is not None:
            keys[parsed[0]] = parsed[1]
    if SYSTEM_KEY_ID not in keys:
        raise DecryptionError("key file has no key with id 1 (the binlog's key)")
    return keys


def _parse_key_line(line: bytes, line_no: int) -> tuple[int, bytes] | None:
    n = len(line)
    p = 0
    while p < n and line[p] in _SPACE:
        p += 1
    if p >= n or line[p] == ord("#"):
        return None
    if line[p] not in _DIGITS:
        raise DecryptionError(f"key file line {line_no}, column {p + 1}: syntax error")
    key_id = 0
    while p < n and line[p] in _DIGITS:
        key_id = key_id * 10 + line[p] - 48
        if key_id > 0xFFFFFFFF:
            raise DecryptionError(f"key file line {line_no}: invalid key id")
        p += 1
    if key_id < 1:
        raise DecryptionError(f"key file line {line_no}: invalid key id 0")
    if p >= n or line[p] != ord(";"):
        raise DecryptionError(f"key file line {line_no}, column {p + 1}: expected ';'")
    p += 1
    start = p
    while p + 1 < n and line[p] in _HEXDIGITS and line[p + 1] in _HEXDIGITS and p - start < 64:
        p += 2
    key = bytes.fromhex(line[start:p].decode("ascii"))
    if (p < n and line[p] in _HEXDIGITS) or len(key) not in (16, 24, 32):
        raise DecryptionError(
            f"key file line {line_no}: invalid key (need 32, 48 or 64 hex digits)"
        )
    return key_id, key


# -- event decryption ---------------------------------------------------------------------


class BinlogDecryptor:
    """Decrypts the events of one encrypted binlog file.

    Args:
        keys: ``{key_id: key}`` from :func:`parse_key_file`; a key management
            plugin with rotation can pass ``{(key_id, key_version): key}`` entries.
        scheme, key_version, nonce: from the file's START_ENCRYPTION_EVENT.
        key_id: always 1 for binlogs.
        checksum: the file's FDE announces CRC32 checksums (used to verify).
        algorithm: ``"aes_cbc"``, ``"aes_ctr"`` or ``"auto"``.
    """

    __slots__ = ("_algorithm", "_checksum", "_ecb", "_key", "_nonce")

    def __init__(
        self,
        keys: Mapping[Any, bytes],
        scheme: int,
        key_version: int,
        nonce: bytes,
        key_id: int = SYSTEM_KEY_ID,
        *,
        checksum: bool = True,
        algorithm: str = "auto",
    ) -> None:
        if scheme != 1:
            raise DecryptionError(f"unknown binlog encryption scheme {scheme}")
        if len(nonce) != BINLOG_NONCE_LENGTH:
            raise DecryptionError(f"binlog nonce must be 12 bytes, got {len(nonce)}")
        if algorithm not in ("auto", "aes_cbc", "aes_ctr"):
            raise DecryptionError(f"unknown algorithm {algorithm!r}")
        key = keys.get((key_id, key_version))
        if key is None:
            if key_version != 1:
                raise DecryptionError(
                    f"no key for key id {key_id} version {key_version}: the binlog was "
                    "written with a rotated key; file_key_management only has version 1"
                )
            key = keys.get(key_id)
        if key is None:
            raise DecryptionError(
                f"no key with id {key_id} in the key file; the binlog needs it "
                "(file_key_management_filename of the server that wrote it)"
            )
        if len(key) not in (16, 24, 32):
            raise DecryptionError(f"AES key must be 16, 24 or 32 bytes, got {len(key)}")
        self._key = bytes(key)
        self._nonce = bytes(nonce)
        self._checksum = checksum
        self._algorithm = algorithm
        self._ecb = Cipher(algorithms.AES(self._key), modes.ECB())

    @classmethod
    def from_start_encryption(
        cls,
        keys: Mapping[Any, bytes],
        start: StartEncryption,
        *,
        checksum: bool = True,
        algorithm: str = "auto",
    ) -> BinlogDecryptor:
        return cls(
            keys,
            start.scheme,
            start.key_version,
            start.nonce,
            checksum=checksum,
            algorithm=algorithm,
        )

    @property
    def algorithm(self) -> str:
        """``"aes_cbc"`` / ``"aes_ctr"`` once known, ``"auto"`` before the first event."""
        return self._algorithm

    def decrypt_event(self, raw: bytes | bytearray | memoryview, position: int) -> bytes:
        """Decrypt one whole event read from the file at offset ``position``."""
        length = len(raw)
        if length < _HEADER_LEN + (_CRC_LEN if self._checksum else 0):
            raise DecryptionError(f"encrypted event at {position} is only {length} bytes")
        declared = _U32.unpack_from(raw, _LEN_OFFSET)[0]
        if declared != length:
            raise DecryptionError(
                f"encrypted event at {position}: length field {declared}, {length} bytes given"
            )
        if not 0 <= position <= 0xFFFFFFFF:
            raise DecryptionError(f"event position {position} does not fit the 32-bit IV field")
        src = bytearray(raw)
        src[_LEN_OFFSET : _LEN_OFFSET + 4] = src[0:4]
        ciphertext = bytes(src[4:])
        iv = self._nonce + _U32.pack(position)
        if self._algorithm == "auto":
            for candidate in ("aes_cbc", "aes_ctr"):
                event = self._assemble(self._decrypt(candidate, ciphertext, iv), length)
                if self._verify(event, position):
                    # Below one block both modes are the same XOR with AES(IV): only
                    # a longer event tells them apart.
                    if len(ciphertext) >= _BLOCK:
                        self._algorithm = candidate
                    return event
            raise DecryptionError(self._wrong_key_message(position))
        event = self._assemble(self._decrypt(self._algorithm, ciphertext, iv), length)
        if not self._verify(event, position):
            raise DecryptionError(self._wrong_key_message(position))
        return event

    def _decrypt(self, algorithm: str, data: bytes, iv: bytes) -> bytes:
        if algorithm == "aes_ctr":
            ctr = Cipher(algorithms.AES(self._key), modes.CTR(iv)).decryptor()
            return ctr.update(data) + ctr.finalize()
        whole = len(data) - len(data) % _BLOCK
        out = b""
        if whole:
            cbc = Cipher(algorithms.AES(self._key), modes.CBC(iv)).decryptor()
            out = cbc.update(data[:whole]) + cbc.finalize()
        tail = data[whole:]
        if tail:
            ecb = self._ecb.encryptor()
            mask = ecb.update(iv) + ecb.finalize()
            out += bytes(a ^ b for a, b in zip(tail, mask, strict=False))
        return out

    @staticmethod
    def _assemble(plain: bytes, length: int) -> bytes:
        # plain holds event bytes 4..end, with the timestamp at (event) offset 9.
        return plain[5:9] + plain[0:5] + _U32.pack(length) + plain[9:]

    def _verify(self, event: bytes, position: int) -> bool:
        _, type_code, _, _, log_pos, _ = _EVENT_HEADER.unpack_from(event, 0)
        if not 0 < type_code <= _MAX_EVENT_TYPE:
            return False
        if self._checksum:
            stored = _U32.unpack_from(event, len(event) - _CRC_LEN)[0]
            return bool(zlib.crc32(memoryview(event)[: len(event) - _CRC_LEN]) == stored)
        # Without checksums the best witness is log_pos: the end offset of the event.
        return bool(log_pos in (0, position + len(event)))

    def _wrong_key_message(self, position: int) -> str:
        what = "CRC32" if self._checksum else "header"
        return (
            f"cannot decrypt the binlog event at position {position}: the {what} does not "
            "verify after decryption -- wrong key file (key id 1 differs from the one the "
            "server used), or a corrupt event"
        )
