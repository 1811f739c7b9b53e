"""TLS on the referee's bot port: the organizer's certificate, or one made for a classroom.

Every bot's stream carries its token (in its Hello) and the hands dealt to it, so a referee
that listens beyond this machine in plain text hands both to anyone on the network. With
TLS the referee serves its TCP port with a certificate: an organizer's own (``--tls-cert
FILE --tls-key FILE``), or, for a classroom without one, a self-signed certificate made here
for the names and addresses it listens on (``--tls self-signed``), kept in the output folder
(``tls/``, the key readable by its owner only) and reused by the next run, so the file the
students were given stays good. Launched bots keep their Unix socket (no network: no TLS).

Bots then connect with ``CRAITS_SERVER=grpcs://HOST:PORT`` and, for a self-signed
certificate, ``CRAITS_TLS_CA=<the certificate file>`` (docs/tls.md).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import ipaddress
import os
import socket
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from server.errors import UserError

if TYPE_CHECKING:  # (cryptography is imported when a certificate is read or made: not by every referee)
    import grpc
    from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes
    from cryptography.x509 import Certificate

SELF_SIGNED = "self-signed"
MODES = (SELF_SIGNED, "off")
"""``--tls`` and the tournament file's ``tls``: make (or reuse) a self-signed certificate, or none."""
TLS_DIR = "tls"
CERT_FILE = "referee-cert.pem"
KEY_FILE = "referee-key.pem"
VALID_DAYS = 825
"""A self-signed certificate's life (a school year and more); one that ends within
:data:`RENEW_DAYS` is replaced."""
RENEW_DAYS = 7
WILDCARDS = ("0.0.0.0", "::", "")


class TLSError(UserError):
    """A certificate or key that cannot be used (unreadable, not PEM, not a pair)."""


@dataclass(frozen=True, slots=True)
class TLSRequest:
    """What the organizer asked for: nothing, a self-signed certificate, or their own files."""

    self_signed: bool = False
    cert: str | None = None
    key: str | None = None
    folder: str | None = None
    """Where a self-signed certificate is kept (None: the output folder's tls/)."""

    @property
    def enabled(self) -> bool:
        return self.self_signed or self.cert is not None


def request(mode: str | None, cert: str | None, key: str | None, *, names: tuple[str, str, str]) -> TLSRequest | None:
    """``--tls``/``--tls-cert``/``--tls-key`` (or the file's keys, named by ``names``) as a request;
    None when none was given (the caller's default stands)."""
    tls_name, cert_name, key_name = names
    if mode is None and cert is None and key is None:
        return None
    if (cert is None) != (key is None):
        given, missing = (cert_name, key_name) if cert is not None else (key_name, cert_name)
        raise UserError(f"{given} needs {missing} too: the certificate and its private key")
    if mode is not None and cert is not None:
        raise UserError(f"{tls_name} {mode!r} and {cert_name}/{key_name} do not go together: "
                        f"give either your certificate, or {tls_name} {SELF_SIGNED}")
    if mode is not None and mode not in MODES:
        raise UserError(f"{tls_name} {mode!r}: expected {' or '.join(MODES)} (or {cert_name} FILE {key_name} FILE)")
    if cert is not None:
        return TLSRequest(cert=cert, key=key)
    return TLSRequest(self_signed=mode == SELF_SIGNED)


@dataclass(frozen=True, slots=True)
class ServerTLS:
    """The certificate the referee serves its TCP port with, ready for gRPC."""

    cert_path: Path
    key_path: Path
    cert_pem: bytes
    key_pem: bytes
    fingerprint: str
    """SHA-256 of the certificate (DER), as ``openssl x509 -fingerprint -sha256`` prints it."""
    self_signed: bool = False
    news: str = ""
    """What happened to a self-signed certificate this run: made, reused, replaced (and why)."""

    def credentials(self) -> grpc.ServerCredentials:
        import grpc  # (here, not above: `craits --help` declares --tls without loading gRPC)

        return grpc.ssl_server_credentials([(self.key_pem, self.cert_pem)])

    def announcement(self, target: str) -> str:
        """One line for whoever tells the bots' authors how to connect."""
        if self.self_signed:
            return (f"TLS: self-signed certificate {self.cert_path} ({self.news}), SHA-256 {self.fingerprint}; "
                    f"hand that file to the bots' authors: they connect with CRAITS_SERVER=grpcs://{target} "
                    f"CRAITS_TLS_CA=<that file> (the private key {self.key_path} stays here)")
        return (f"TLS: certificate {self.cert_path}, SHA-256 {self.fingerprint}; bots connect with "
                f"CRAITS_SERVER=grpcs://{target} (and CRAITS_TLS_CA=<the CA's certificate> unless their "
                "system trusts its issuer)")


def server_tls(wanted: TLSRequest | None, folder: str | os.PathLike[str], address: str) -> ServerTLS | None:
    """The certificate for a referee listening on ``address``, or None for plain text. A
    self-signed one is made (or reused) in ``folder``/tls/. Raises TLSError."""
    if wanted is None or not wanted.enabled:
        return None
    if wanted.cert is not None and wanted.key is not None:
        return load_pair(Path(wanted.cert), Path(wanted.key))
    host = address.rpartition(":")[0].strip("[]")
    return self_signed(Path(wanted.folder or folder) / TLS_DIR, host)


# ------------------------------------------------------------------ certificates


def load_pair(cert_path: Path, key_path: Path) -> ServerTLS:
    """An organizer's certificate and key, checked to be readable PEM and to belong together."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    cert_pem = _read(cert_path, "TLS certificate")
    key_pem = _read(key_path, "TLS key")
    try:
        certs = x509.load_pem_x509_certificates(cert_pem)
    except ValueError:
        raise TLSError(f"TLS certificate {cert_path}: not a PEM certificate (-----BEGIN CERTIFICATE-----)") from None
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError) as err:
        why = "it is protected by a password: give a key without one" if isinstance(err, TypeError) else (
            "not a PEM private key (-----BEGIN ... PRIVATE KEY-----)")
        raise TLSError(f"TLS key {key_path}: {why}") from None
    if _public(key.public_key()) != _public(certs[0].public_key()):
        raise TLSError(f"TLS key {key_path} is not the private key of the certificate {cert_path}")
    return ServerTLS(cert_path, key_path, cert_pem, key_pem, _fingerprint(certs[0]))


def self_signed(folder: Path, host: str) -> ServerTLS:
    """The self-signed certificate in ``folder`` if it is still good for ``host``, else a new one."""
    from cryptography import x509

    cert_path, key_path = folder / CERT_FILE, folder / KEY_FILE
    dns, ips = names_for(host)
    why = "made now"
    if cert_path.exists() or key_path.exists():
        why = _stale(cert_path, key_path, dns, ips)
        if not why:
            _private(key_path)
            cert_pem, key_pem = cert_path.read_bytes(), key_path.read_bytes()
            cert = x509.load_pem_x509_certificate(cert_pem)
            return ServerTLS(cert_path, key_path, cert_pem, key_pem, _fingerprint(cert), True,
                             "reused from an earlier run")
        why = f"made now: the one there {why}; hand out the new file"
    try:
        cert_pem, key_pem = _make(dns, ips)
        folder.mkdir(parents=True, exist_ok=True)
        _write(key_path, key_pem, 0o600)
        _write(cert_path, cert_pem, 0o644)
    except OSError as err:
        raise TLSError(f"cannot write the self-signed certificate in {folder}: {err.strerror or err}") from None
    return ServerTLS(cert_path, key_path, cert_pem, key_pem, _fingerprint(x509.load_pem_x509_certificate(cert_pem)),
                     True, why)


def names_for(host: str) -> tuple[list[str], list[str]]:
    """The DNS names and IP addresses a certificate for a referee listening on ``host`` names:
    the host itself, or every name and address of this machine for a wildcard, and always
    this machine's loopback (so a bot on the same machine connects by 127.0.0.1 or localhost)."""
    dns = ["localhost"]
    ips = ["127.0.0.1", "::1"]
    if host in WILDCARDS:
        for name in (socket.gethostname(), socket.getfqdn()):
            _add(dns, name.lower())
        for address in _local_addresses():
            _add(ips, address)
    else:
        try:
            _add(ips, str(ipaddress.ip_address(host)))
        except ValueError:
            _add(dns, host.lower())
    return dns, ips


def _add(names: list[str], name: str) -> None:
    if name and name not in names:
        names.append(name)


def _local_addresses() -> Iterable[str]:
    """This machine's addresses (Linux: each interface's IPv4 address, global IPv6; else the
    host name's)."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            with contextlib.suppress(OSError):
                answer = fcntl.ioctl(probe.fileno(), 0x8915, struct.pack("256s", name[:15].encode()))  # SIOCGIFADDR
                yield socket.inet_ntoa(answer[20:24])
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/if_inet6").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 4 and fields[3] == "00":  # global scope (link-local ones need an interface)
                yield str(ipaddress.IPv6Address(bytes.fromhex(fields[0])))
    with contextlib.suppress(OSError, UnicodeError):
        for info in socket.getaddrinfo(socket.gethostname(), None, type=socket.SOCK_STREAM):
            address = str(info[4][0]).partition("%")[0]
            if not ipaddress.ip_address(address).is_link_local:
                yield address


def _stale(cert_path: Path, key_path: Path, dns: list[str], ips: list[str]) -> str:
    """Why the certificate kept in the folder cannot serve again ("" when it can)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as err:
        return f"could not be read ({getattr(err, 'strerror', None) or err})"
    if _public(key.public_key()) != _public(cert.public_key()):
        return "did not match its key"
    if cert.not_valid_after_utc - datetime.timedelta(days=RENEW_DAYS) < datetime.datetime.now(datetime.UTC):
        return f"expires on {cert.not_valid_after_utc:%Y-%m-%d}"
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return "names no host"
    have = set(names.get_values_for_type(x509.DNSName)) | {str(a) for a in names.get_values_for_type(x509.IPAddress)}
    missing = [name for name in (*dns, *ips) if name not in have]
    return f"did not name {', '.join(missing)}" if missing else ""


def _make(dns: list[str], ips: list[str]) -> tuple[bytes, bytes]:
    """A new self-signed certificate (ECDSA P-256) for these names, and its key, as PEM."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"Craits referee on {socket.gethostname()}"[:64])])
    now = datetime.datetime.now(datetime.UTC)
    alt = [x509.DNSName(n) for n in dns] + [x509.IPAddress(ipaddress.ip_address(a)) for a in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        # Its own authority: the file a bot is given is the root it trusts.
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, content_commitment=False,
                                     key_encipherment=False, data_encipherment=False, key_agreement=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def _fingerprint(cert: Certificate) -> str:
    from cryptography.hazmat.primitives import serialization

    der = cert.public_bytes(serialization.Encoding.DER)
    return ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())


def _public(key: PublicKeyTypes) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise TLSError(f"{what} {path}: cannot read it: {err.strerror or err}") from None


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write whole or not at all, with ``mode`` from the start (a key is never readable by others)."""
    part = path.with_name(path.name + ".part")
    with contextlib.suppress(FileNotFoundError):
        part.unlink()
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(part, path)


def _private(key_path: Path) -> None:
    """A kept key that others may read (copied, unpacked with another umask) is made private again."""
    if key_path.stat().st_mode & 0o077:
        os.chmod(key_path, 0o600)


# ------------------------------------------------------------------ plain text


def is_loopback(host: str) -> bool:
    """True for an address only this machine reaches (127.0.0.0/8, ::1, localhost)."""
    host = host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def plain_text_warning(host: str, port: int) -> str | None:
    """The start-up line for a referee that listens on ``host`` beyond this machine without TLS, or None."""
    if is_loopback(host):
        return None
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return (f"warning: listening on {address} without TLS: anyone on that network can read the bots' tokens and "
            f"hands, and play as them; add --tls {SELF_SIGNED} (or --tls-cert FILE --tls-key FILE; in a tournament "
            f"file, tls = \"{SELF_SIGNED}\") to encrypt (docs/tls.md)")
