"""Tests for encrypted MariaDB binlogs (replica_client.binlog.encryption).

Real bytes: ``ENCRYPTED_BINLOG_PREFIX`` is the first 1945 bytes of a binlog written
by a private, throwaway MariaDB 10.11.19 started with ``--encrypt-binlog=ON
--plugin-load-add=file_key_management --file-key-management-filename=<file with
ENCRYPTED_KEY_FILE> --binlog-checksum=CRC32 --binlog-format=ROW`` (default
algorithm AES_CBC) after ``CREATE DATABASE IF NOT EXISTS w``, a CREATE TABLE and
one 3-row INSERT. ``SHOW BINLOG EVENTS`` on that server listed the positions, types
and statements asserted below. The integration tests make fresh encrypted binlogs
with the harness (CBC and CTR) and compare with ``SHOW BINLOG EVENTS``.

Encrypted key files: ``OPENSSL_SHA1_KEY_FILE`` and ``OPENSSL_PBKDF2_KEY_FILE`` were
made by the OpenSSL 3.0 command line from ``PLAIN_KEY_FILE``::

    openssl enc -aes-256-cbc -md sha1 -pass pass:secret -in keys.txt -out k1.enc
    openssl enc -aes-256-cbc -md sha256 -pbkdf2 -iter 1000 -pass pass:secret \\
        -in keys.txt -out k2.enc
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from hypothesis import given, settings
from hypothesis import strategies as st

from replica_client.binlog.encryption import (
    BinlogDecryptor,
    StartEncryption,
    parse_key_file,
    parse_start_encryption,
)
from replica_client.errors import DecryptionError
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import ServerVariant

HEADER = struct.Struct("<IBIIIH")

ENCRYPTED_KEY_FILE = "1;7fb826c0e67486cee599b8cf77a4dd62ee190003be1d47ff57a83840bff47e47\n"
ENCRYPTED_BINLOG_PREFIX = bytes.fromhex(
    "fe62696e8593016b0f01000000fc000000000100000000040031302e31312e31392d4d6172696144422d302b"
    "646562313275312d6c6f6700000000000000000000000000000000000000008593016b13380d000800120004"
    "040404120000e400041a08000000080808020000000a0a0a0000000000000a0a0a0000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000041304000d0808080a0a0a012f8530ef8593016ba4010000"
    "00280000002801000000000101000000c59539e8a5304285f4ed3570237db06f2f890befdbc4ad7cc91d0000"
    "00c7ead74a0c2bb2f18f8d1ffc3fe4e2152eded472ddbe6166142b0000008efce8684be6899f9cc998ca8449"
    "b9d97c82181d65af0e08889be267ecedebde4c4f7bb88bf1c32a0000002fea5ae48b2e38778510f781734d95"
    "3c79ed271a14386ad5cc7473ffe44628ec07416c0e597c5f000000e6784bfb79866b0e6b6fc4e594985c1bc2"
    "7b8a646dabc88a9c3f5a3cb1736836179b9f0e1073b26d41fe833422259747ccff667527145f89c33778a26a"
    "79fda4e01ad1d5cfb810b8867c2546133252e15497e9035218e50c5ede6d2a00000021fab9d741ec0501b6c5"
    "0cdec0caa8fd0261cd1a279a005d716e3bc85af3e38a2209c66c76f4a1000000c25b6ca57707f198e9ee054f"
    "4451f9e7ed0055f33cb78b4da2aa83e3780b5c5b5ca6a2cb6b446f296aaaa0638948270935dd4c5bff523670"
    "f14f5c42af32879145026cdd54686aa4847c354c0627cf5c566425205335fc7d4a1aa07018b716e42e981cdb"
    "5c292e8eceea25e1ee689d959a503cd0eadb95ebd77e38ee53d37d9a6c235980923cb73942644d0c0d83b910"
    "2f9eb0ae3f647d16a04ff8b70e2a000000d12ccf16c49816933276843066fbc1e361b8ecb895e001b82a8ffa"
    "cbe5adce23dd808de3b3e47a000000228bf320e8c8ce735f20372c174df13af8d43b6314376069debc905e88"
    "08ebbc38dc95f636ef261e03c76bab7ba5be2a3d9cdd30ad07fa7176796015eb62e89e7a4eceb24431b9767f"
    "3e785608126bd1781bf3152ff777ee266fe6fedf7ab6cc5c3ac3b80d44808b0620fd6ff3f510a201113fa09a"
    "70320000001fa99f82b7297857132bb4d94fc6552afa029e28692e90bed45ea928df9cf50029f7d881c4aeea"
    "1db8ae34b427b5e003000024960ab67862a243e1bf5dfeb8600472b3e9f163004c700f9181a05f270aaafd99"
    "297d03cf7051ff19694a06543c73fc07cb82db97252ac0770b1ddfb169e6518107da3759e09cab36570e5949"
    "76955b2bbefc1118701f7942b8dc6d704f39e8ccab9da4b7d3c922c65598e8e9a6c157fda277405aea6f0074"
    "ca074dd1eb067e07f2a75b66062c7917be7480af99a82c92d53dbdce32267ec654df2641f7646eb4d7ee05f0"
    "58d8e688c4901b1887cffad95bb81e505a87347e6e75c4b73e57332488200e8b4bd09c87592123751de8e2ec"
    "3af5102f0160d66ac2319d60a3992642b16ca075c50253578a4e15d5a9d3ba1fecb0af479dea2e81b87e9e04"
    "1066aa4e9b3198faf192bb51a1f769e2dff17cc5b876fd5f22a70622db49becca05fed10d02490dd6dea3768"
    "80271ecd57eb2e6d6f91e0b3748f49d6b6d30b22c4a975a4a198601440916ca006c09ef1969a3a5517835c68"
    "6c1eafe13fc8d3bdd0e6d4a6aaec092b52d78a37cbf95e89cfbdc0a10bd63fba6d591b5cdd8c4e6a4a4d46e8"
    "74e1971be7aa82cbc144a0b0624e51c9c432fd58065ab0f822871c6ea9f3ef04b1bebe82b1d889a1bf6509bf"
    "cd21847c6d0b24c1616d43bad99b37bb3262027d0976b800e714e84145fefe5fdb904ac0cd138039de168054"
    "89436acd279caf621f0a7c612014ef972e2f9814a9e86edd57bd9927d21332cad842acfebef20ad0aff57ad9"
    "b0b60f37b4fcee2521aa79b424d253977f6617c8f69e933f5b344de6203272ba66978e4a687b7688e927665f"
    "7085b3bbb954e748c820383555580c3d6f4eaa4610457a9e3dfc04e60a62d46d658db7f9b710f5f5306331d7"
    "663d4e3fca503ea2853bff8614c0223ddcddf88b36547fc88e542367870645d36171bdcce90d2e38c5ac062c"
    "6472030e5e38d9f213ead41d9f014f9bf916d52d3bbfb8f802818c23e1c586c72e93ac627e0691a2545159ae"
    "cda6695d096386eddb2ce7bbb4494ab34025d4c8791ca6474cb83231023687a883a50fa4bfea7b6fdb9ecbd0"
    "f44d654456ef0b43b17bdc0a87ec5d0c6d49aa16d866317743befe84ef6a9fa2fc4a42482bbbb4070c3be308"
    "1dfea0dc21d3fcd9fd4b4670d016e3bad5d0f703bbef3eddbde69146581e75085d055e50604966a15a66cfab"
    "2f9fcfabe0c0a2ee0d5c67fd44ad6b7078cbc51bd2f8a17ec0089a8596cf36399c498f3191c2d893a88100c8"
    "005e7c8fb633cdf490281c6f68d46cbdd5aeb80897038d2150885a75a741d98fcdd67a9c0ac8a66bac275a85"
    "8e4ded700769abc9774a18878166f1306e546fcf9399b950102a69f1030417eb21fa12ba9174302ef93780f4"
    "d67447e0211d862545760ba643060c4a29f3ceb5d8cccc8d9884dd652a23f41f000000553f6470f20a0c6109"
    "9f7884af1e398d3cfe"
)

PLAIN_KEY_FILE = (
    "# test keys\n"
    "1;F5502320F8429037B8DAEF761B189D12\n"
    "2;770A8A65DA156D24EE2A093277530142770A8A65DA156D24EE2A093277530142\n"
)
KEY1 = bytes.fromhex("F5502320F8429037B8DAEF761B189D12")
KEY2 = bytes.fromhex("770A8A65DA156D24EE2A093277530142770A8A65DA156D24EE2A093277530142")
OPENSSL_SHA1_KEY_FILE = bytes.fromhex(
    "53616c7465645f5fc99a60dbd1f6e67ba734d85137b54928b06212d2bd64706941cb9a311b3e45b5"
    "f915356f60ca059d9182350f77c7670ca5f3746c256b0dfa5884765f24f3324290335c97554f0260"
    "bd8391cd22cf1a69b4df31f11965ac967e62990e86076540def4cf984c33cafc9d3c192a0c8e4007"
    "906e4bdd261a3014e17ceef20b5d2916aab120feabad8c98"
)
OPENSSL_PBKDF2_KEY_FILE = bytes.fromhex(
    "53616c7465645f5f121550294d6882b51d16c8c85f94fd50d88c9ec50edb366ad60c48afa822d00d"
    "494c9958ed7c4a76892372a1ef5b2f231f6b94effc19c0281ab13b2a03ff521fb585a1abd0872cfe"
    "40c4c0366c9f3814b74de942e1e72b44ca29987ee6171ccaf35501bd6615dab619808edea6e0e981"
    "5022c37622169e71b8f40bf32338e2e48c8b222ec7fd32c0"
)


def walk(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Tiny test-local walker: (offset, whole event); the length field is plain."""
    assert data[:4] == b"\xfebin"
    pos = 4
    while pos + HEADER.size <= len(data):
        size = HEADER.unpack_from(data, pos)[3]
        yield pos, data[pos : pos + size]
        pos += size


def crc_ok(event: bytes) -> bool:
    return bool(zlib.crc32(event[:-4]) == struct.unpack_from("<I", event, len(event) - 4)[0])


def decrypt_file(
    data: bytes, keys: dict[int, bytes], algorithm: str = "auto"
) -> list[tuple[int, bytes]]:
    """Decrypt every event after START_ENCRYPTION; check CRC and log_pos of each."""
    out: list[tuple[int, bytes]] = []
    decryptor: BinlogDecryptor | None = None
    for pos, event in walk(data):
        if decryptor is None:
            assert crc_ok(event) or event[4] == 15  # FDE CRC: see the fixtures MANIFEST
            if event[4] == 164:
                start = parse_start_encryption(event[19:-4])
                decryptor = BinlogDecryptor.from_start_encryption(keys, start, algorithm=algorithm)
            out.append((pos, event))
            continue
        plain = decryptor.decrypt_event(event, pos)
        assert crc_ok(plain)
        assert HEADER.unpack_from(plain, 0)[4] == pos + len(event)  # log_pos = end
        out.append((pos, plain))
    assert decryptor is not None, "no START_ENCRYPTION_EVENT"
    return out


def query_text(event: bytes) -> str:
    db_len = event[19 + 8]
    status_len = struct.unpack_from("<H", event, 19 + 11)[0]
    return event[19 + 13 + status_len + db_len + 1 : -4].decode()


# -- real bytes -----------------------------------------------------------------------------


def test_real_encrypted_binlog() -> None:
    keys = parse_key_file(ENCRYPTED_KEY_FILE)
    events = decrypt_file(ENCRYPTED_BINLOG_PREFIX, keys)
    # What SHOW BINLOG EVENTS printed on the server that wrote the file:
    assert [(pos, ev[4]) for pos, ev in events] == [
        (4, 15),  # Format_desc (plain)
        (256, 164),  # Start_encryption (plain)
        (296, 163),  # Gtid_list
        (325, 161),  # Binlog_checkpoint
        (368, 162),  # Gtid 0-1-1
        (410, 2),  # Query
        (505, 162),
        (547, 2),
        (708, 162),
        (750, 160),  # Annotate_rows
        (872, 19),  # Table_map
        (922, 23),  # Write_rows_v1
        (1914, 16),  # Xid
    ]
    by_pos = dict(events)
    assert query_text(by_pos[410]) == "CREATE DATABASE IF NOT EXISTS w"
    assert query_text(by_pos[547]).startswith("CREATE TABLE t1 (id INT PRIMARY KEY")
    assert by_pos[750][19:-4] == (
        b"INSERT INTO t1 VALUES (1,'alpha','short',1.5),(2,'beta',REPEAT('xyz',300)"
        b",-2.25),(3,'gamma',NULL,0)"
    )
    assert by_pos[325][19:-4].endswith(b"mysql-bin.000001")
    # The file itself is not readable: its bytes are not the plaintext.
    assert ENCRYPTED_BINLOG_PREFIX[410:505] != by_pos[410]
    assert ENCRYPTED_BINLOG_PREFIX[410 + 9 : 410 + 13] == by_pos[410][9:13]  # length stays


def test_real_start_encryption_event() -> None:
    event = ENCRYPTED_BINLOG_PREFIX[256:296]
    assert crc_ok(event) and event[4] == 164
    start = parse_start_encryption(event[19:-4])
    assert start.scheme == 1 and start.key_version == 1 and len(start.nonce) == 12


def test_real_binlog_wrong_key() -> None:
    wrong = {1: os.urandom(32)}
    with pytest.raises(DecryptionError, match="wrong key"):
        decrypt_file(ENCRYPTED_BINLOG_PREFIX, wrong)
    with pytest.raises(DecryptionError, match="wrong key"):
        decrypt_file(
            ENCRYPTED_BINLOG_PREFIX, parse_key_file(ENCRYPTED_KEY_FILE), algorithm="aes_ctr"
        )


def test_real_binlog_missing_key() -> None:
    with pytest.raises(DecryptionError, match="no key with id 1"):
        BinlogDecryptor({2: KEY2}, 1, 1, b"n" * 12)
    with pytest.raises(DecryptionError, match="version 2"):
        BinlogDecryptor({1: KEY2}, 1, 2, b"n" * 12)
    assert BinlogDecryptor({(1, 2): KEY2}, 1, 2, b"n" * 12).algorithm == "auto"


def test_real_binlog_tampered_event() -> None:
    keys = parse_key_file(ENCRYPTED_KEY_FILE)
    start = parse_start_encryption(ENCRYPTED_BINLOG_PREFIX[256 + 19 : 296 - 4])
    decryptor = BinlogDecryptor.from_start_encryption(keys, start)
    event = bytearray(ENCRYPTED_BINLOG_PREFIX[410:505])
    assert decryptor.decrypt_event(bytes(event), 410)[4] == 2
    event[50] ^= 1
    with pytest.raises(DecryptionError):
        decryptor.decrypt_event(bytes(event), 410)
    with pytest.raises(DecryptionError):  # wrong position -> wrong IV
        decryptor.decrypt_event(ENCRYPTED_BINLOG_PREFIX[410:505], 411)
    with pytest.raises(DecryptionError):  # length field disagrees
        decryptor.decrypt_event(ENCRYPTED_BINLOG_PREFIX[410:504], 410)


# -- an independent test-side encryptor, step by step from Log_event_writer -------------


def encrypt_event(plain: bytes, key: bytes, nonce: bytes, position: int, mode: str) -> bytes:
    iv = nonce + struct.pack("<I", position)
    moved = bytearray(plain)
    moved[9:13] = plain[0:4]  # timestamp over the length field
    data = bytes(moved[4:])
    if mode == "ctr":
        enc = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
        ct = enc.update(data) + enc.finalize()
    else:
        whole = len(data) // 16 * 16
        enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
        ct = enc.update(data[:whole]) + enc.finalize() if whole else b""
        ecb = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
        mask = ecb.update(iv) + ecb.finalize()
        ct += bytes(a ^ b for a, b in zip(data[whole:], mask, strict=False))
    # written: ct[5:9], then ct[0:5], then the plain length, then ct[9:]
    return ct[5:9] + ct[0:5] + plain[9:13] + ct[9:]


def make_event(type_code: int, body: bytes, position: int, checksum: bool) -> bytes:
    size = 19 + len(body) + (4 if checksum else 0)
    event = HEADER.pack(1_700_000_000, type_code, 7, size, position + size, 0) + body
    if checksum:
        event += struct.pack("<I", zlib.crc32(event))
    return event


@settings(max_examples=200)
@given(
    body=st.binary(min_size=0, max_size=100),
    key=st.sampled_from([KEY1, os.urandom(24), KEY2]),
    mode=st.sampled_from(["cbc", "ctr"]),
    checksum=st.booleans(),
    position=st.integers(4, 2**32 - 200),
)
def test_round_trip(body: bytes, key: bytes, mode: str, checksum: bool, position: int) -> None:
    nonce = hashlib.sha256(body).digest()[:12]
    plain = make_event(2, body, position, checksum)
    cipher = encrypt_event(plain, key, nonce, position, mode)
    assert len(cipher) == len(plain)
    decryptor = BinlogDecryptor({1: key}, 1, 1, nonce, checksum=checksum)
    assert decryptor.decrypt_event(cipher, position) == plain
    if len(plain) - 4 >= 16:
        assert decryptor.algorithm == ("aes_cbc" if mode == "cbc" else "aes_ctr")
    else:  # under one AES block CBC-with-residual and CTR are the same cipher
        assert decryptor.algorithm == "auto"
    fixed = BinlogDecryptor({1: key}, 1, 1, nonce, checksum=checksum, algorithm="aes_" + mode)
    assert fixed.decrypt_event(memoryview(cipher), position) == plain


@pytest.mark.parametrize("checksum", [True, False])
def test_wrong_key_is_detected(checksum: bool) -> None:
    nonce = b"\x01" * 12
    for body_len in range(0, 40):
        plain = make_event(30, bytes(range(body_len)), 1000, checksum)
        cipher = encrypt_event(plain, KEY1, nonce, 1000, "cbc")
        decryptor = BinlogDecryptor({1: bytes(16)}, 1, 1, nonce, checksum=checksum)
        with pytest.raises(DecryptionError):
            decryptor.decrypt_event(cipher, 1000)


def test_decryptor_arguments() -> None:
    with pytest.raises(DecryptionError):
        BinlogDecryptor({1: KEY1}, 2, 1, b"n" * 12)
    with pytest.raises(DecryptionError):
        BinlogDecryptor({1: KEY1}, 1, 1, b"short")
    with pytest.raises(DecryptionError):
        BinlogDecryptor({1: b"x" * 15}, 1, 1, b"n" * 12)
    with pytest.raises(DecryptionError):
        BinlogDecryptor({1: KEY1}, 1, 1, b"n" * 12, algorithm="aes_gcm")
    decryptor = BinlogDecryptor({1: KEY1}, 1, 1, b"n" * 12)
    with pytest.raises(DecryptionError):
        decryptor.decrypt_event(b"\x00" * 10, 4)
    with pytest.raises(DecryptionError):
        decryptor.decrypt_event(make_event(2, b"x" * 10, 4, True), 2**32)


@pytest.mark.parametrize(
    "body", [b"", b"\x01\x01\x00\x00", b"\x02" + bytes(16), b"\x01" + bytes(15)]
)
def test_bad_start_encryption(body: bytes) -> None:
    with pytest.raises(DecryptionError):
        parse_start_encryption(body)


def test_start_encryption_layout() -> None:
    body = b"\x01" + struct.pack("<I", 7) + bytes(range(12))
    assert parse_start_encryption(body) == StartEncryption(1, 7, bytes(range(12)))


# -- key files ------------------------------------------------------------------------------


def test_plain_key_file() -> None:
    keys = parse_key_file(PLAIN_KEY_FILE)
    assert keys == {1: KEY1, 2: KEY2}
    assert parse_key_file(PLAIN_KEY_FILE.encode()) == keys


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1;" + "ab" * 24 + "\n", {1: bytes([0xAB]) * 24}),
        ("  \t1;" + "00" * 16, {1: bytes(16)}),  # leading blanks, no final newline
        ("\n\n# c\n   # indented comment\n1;" + "11" * 32 + "\n", {1: b"\x11" * 32}),
        ("1;" + "11" * 16 + "\n1;" + "22" * 16 + "\n", {1: b"\x22" * 16}),  # last wins
        ("1;" + "11" * 16 + " trailing text\n", {1: b"\x11" * 16}),
        ("1;" + "11" * 16 + "\r\n", {1: b"\x11" * 16}),  # CRLF
        ("4294967295;" + "33" * 16 + "\n1;" + "11" * 16, {1: b"\x11" * 16, 2**32 - 1: b"3" * 16}),
        ("1;" + "11" * 16 + "\n\x002;zz", {1: b"\x11" * 16}),  # NUL ends the file
    ],
)
def test_key_file_forms(text: str, expected: dict[int, bytes]) -> None:
    assert parse_key_file(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# only a comment\n",
        "2;" + "11" * 16,  # no key 1
        "x;" + "11" * 16,
        "0;" + "11" * 16,
        "4294967296;" + "11" * 16,
        "1 ;" + "11" * 16,  # blank before ';'
        "1:" + "11" * 16,
        "1; " + "11" * 16,  # blank after ';'
        "1;" + "11" * 15,  # 15 bytes
        "1;" + "11" * 20,  # 20 bytes
        "1;" + "11" * 16 + "1",  # odd number of hex digits
        "1;" + "11" * 33,  # 66 hex digits
        "1;" + "zz" * 16,
    ],
)
def test_bad_key_files(text: str) -> None:
    with pytest.raises(DecryptionError):
        parse_key_file(text)


def test_openssl_encrypted_key_files() -> None:
    """Files written by the openssl command line (see the module docstring)."""
    assert parse_key_file(OPENSSL_SHA1_KEY_FILE, "secret") == {1: KEY1, 2: KEY2}
    assert parse_key_file(
        OPENSSL_PBKDF2_KEY_FILE, "secret", digest="sha256", pbkdf2_iterations=1000
    ) == {1: KEY1, 2: KEY2}
    with pytest.raises(DecryptionError, match="give its password"):
        parse_key_file(OPENSSL_SHA1_KEY_FILE)
    for bad in ("Secret", "secret2"):
        with pytest.raises(DecryptionError):
            parse_key_file(OPENSSL_SHA1_KEY_FILE, bad)
    with pytest.raises(DecryptionError):
        parse_key_file(OPENSSL_PBKDF2_KEY_FILE, "secret")  # wrong KDF


def openssl_style_encrypt(
    text: bytes, password: str, digest: str = "sha1", iterations: int = 0
) -> bytes:
    """An independent ``openssl enc -aes-256-cbc`` writer: EVP_BytesToKey or PBKDF2."""
    salt = os.urandom(8)
    if iterations:
        material = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations, 48)
    else:
        material, prev = b"", b""
        while len(material) < 48:
            prev = hashlib.new(digest, prev + password.encode() + salt).digest()
            material += prev
    padder = padding.PKCS7(128).padder()
    padded = padder.update(text) + padder.finalize()
    enc = Cipher(algorithms.AES(material[:32]), modes.CBC(material[32:48])).encryptor()
    return b"Salted__" + salt + enc.update(padded) + enc.finalize()


@pytest.mark.parametrize(
    ("digest", "iterations"),
    [("sha1", 0), ("sha256", 0), ("sha512", 0), ("sha1", 1), ("sha384", 20000)],
)
def test_python_encrypted_key_files(digest: str, iterations: int) -> None:
    blob = openssl_style_encrypt(PLAIN_KEY_FILE.encode(), "pa55 word", digest, iterations)
    keys = parse_key_file(blob, "pa55 word", digest=digest, pbkdf2_iterations=iterations)
    assert keys == {1: KEY1, 2: KEY2}


def test_key_file_option_errors() -> None:
    with pytest.raises(DecryptionError, match="not encrypted"):
        parse_key_file(PLAIN_KEY_FILE, "secret")
    with pytest.raises(DecryptionError):
        parse_key_file(PLAIN_KEY_FILE, digest="md5")
    with pytest.raises(DecryptionError):
        parse_key_file(PLAIN_KEY_FILE, pbkdf2_iterations=-1)
    with pytest.raises(DecryptionError):
        parse_key_file(b"Salted__abc", "secret")  # too short for the salt
    with pytest.raises(DecryptionError):
        parse_key_file(b"Salted__" + bytes(8) + bytes(15), "secret")  # not whole blocks
    with pytest.raises(DecryptionError):
        parse_key_file(b"#" * (1024 * 1024 + 1))


@given(st.binary(max_size=200), st.one_of(st.none(), st.text(min_size=1, max_size=8)))
def test_any_key_file_bytes_parse_or_raise(data: bytes, password: str | None) -> None:
    try:
        keys = parse_key_file(data, password)
    except DecryptionError:
        return
    assert 1 in keys and all(len(k) in (16, 24, 32) for k in keys.values())


# -- integration: fresh encrypted binlogs from the harness ------------------------------------


WORKLOAD = [
    "CREATE DATABASE IF NOT EXISTS enc_test",
    "DROP TABLE IF EXISTS enc_test.t",
    "CREATE TABLE enc_test.t (id INT PRIMARY KEY, v VARCHAR(200), b BLOB)",
    "INSERT INTO enc_test.t SELECT seq, REPEAT(CHAR(65 + seq % 26), seq % 150), "
    "REPEAT('z', seq * 3) FROM enc_test.seq_1_to_400",
    "UPDATE enc_test.t SET v = CONCAT(v, '#') WHERE id % 7 = 0",
    "DELETE FROM enc_test.t WHERE id > 350",
]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("extra", "algorithm"),
    [((), "aes_cbc"), (("--file-key-management-encryption-algorithm=AES_CTR",), "aes_ctr")],
)
def test_encrypted_binlog_from_server(
    mariadb_primary_factory: PrimaryFactory, extra: tuple[str, ...], algorithm: str
) -> None:
    srv = mariadb_primary_factory(ServerVariant(encrypt=True, extra_args=extra))
    assert srv.key_file is not None
    keys = parse_key_file(Path(srv.key_file).read_bytes())
    srv.sql_many(WORKLOAD)
    srv.sql("FLUSH BINARY LOGS")
    files = srv.binlog_files()[:-1]  # the last one is still being written
    assert files
    total = 0
    for path in files:
        data = path.read_bytes()
        events = decrypt_file(data, keys)
        # The server's own decrypted view of the same file is the oracle.
        shown = srv.sql(f"SHOW BINLOG EVENTS IN '{path.name}'")
        assert [(int(r[1]), int(r[4])) for r in shown] == [
            (pos, pos + len(ev)) for pos, ev in events
        ]
        for (_pos, ev), row in zip(events, shown, strict=True):
            if ev[4] == 2:
                assert str(row[5]).endswith(query_text(ev).split("; ")[-1])
        total += len(events)
        # The chosen algorithm is the one the server used; the other one fails.
        other = "aes_ctr" if algorithm == "aes_cbc" else "aes_cbc"
        if len(events) > 2:
            with pytest.raises(DecryptionError):
                decrypt_file(data, keys, algorithm=other)
            decrypt_file(data, keys, algorithm=algorithm)
        # A wrong key is refused, not turned into garbage.
        with pytest.raises(DecryptionError):
            decrypt_file(data, {1: os.urandom(32)})
    assert total > 10
