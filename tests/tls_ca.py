"""A throwaway certificate authority for TLS tests, made in the test (nothing from the machine's store).

`TestCA(folder)` writes `ca.pem`, a server certificate for 127.0.0.1/localhost (`server.pem`, key
inside) and a client certificate (`client.pem`, `client.key`), all signed by the CA.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class TestCA:
    __test__ = False  # a helper, not a test class

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        now = dt.datetime.now(dt.UTC)
        self._valid = (now - dt.timedelta(minutes=5), now + dt.timedelta(days=1))
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.cert = (
            x509.CertificateBuilder().subject_name(_name("evalgate test CA")).issuer_name(_name("evalgate test CA"))
            .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(self._valid[0]).not_valid_after(self._valid[1])
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        self.ca_file = folder / "ca.pem"
        self.ca_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))
        self.server_file = folder / "server.pem"
        self.server_file.write_bytes(self._leaf("127.0.0.1", server=True))
        self.client_file = folder / "client.pem"
        self.client_key_file = folder / "client.key"
        cert, key = self._leaf_parts("evalgate client", server=False)
        self.client_file.write_bytes(cert)
        self.client_key_file.write_bytes(key)

    def _leaf(self, common: str, *, server: bool) -> bytes:
        cert, key = self._leaf_parts(common, server=server)
        return cert + key

    def _leaf_parts(self, common: str, *, server: bool) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder().subject_name(_name(common)).issuer_name(self.cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(self._valid[0]).not_valid_after(self._valid[1])
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server
                                                  else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        )
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName([
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)
