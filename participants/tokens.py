"""Tokens: a participant's (or the organizer's) one secret, shown once and stored only hashed.

A token reads ``craits-ID-SECRET``: ``ID`` is a short public handle (the row to look in), the
whole token is checked against a salted scrypt hash of it, so the store never holds a token
and a stolen store does not let anyone in. Checking costs about 50 ms and 16 MiB (scrypt's
point); the referee and the web pages remember a token that passed for as long as they run.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

PREFIX = "craits-"
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
_SHAPE = re.compile(r"^craits-([a-z0-9]{8})-([A-Za-z0-9_-]{20,64})$")
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


@dataclass(frozen=True, slots=True)
class TokenHash:
    """What the store keeps of a token: its public id, the salt and the scrypt hash."""

    token_id: str
    salt: bytes
    digest: bytes


def new_token() -> str:
    """A fresh token (about 190 bits of secret)."""
    token_id = "".join(secrets.choice(_ALPHABET) for _ in range(8))
    return f"{PREFIX}{token_id}-{secrets.token_urlsafe(24)}"


def token_id(token: str) -> str | None:
    """The public id of a well-formed token, else None (a typo is refused before any hashing)."""
    match = _SHAPE.match(token.strip())
    return match.group(1) if match else None


def _scrypt(token: str, salt: bytes) -> bytes:
    return hashlib.scrypt(token.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32)


def hash_token(token: str) -> TokenHash:
    ident = token_id(token)
    if ident is None:
        raise ValueError("not a craits token")
    salt = secrets.token_bytes(16)
    return TokenHash(ident, salt, _scrypt(token.strip(), salt))


def matches(token: str, stored: TokenHash) -> bool:
    """Whether ``token`` is the one ``stored`` was made from (in constant time)."""
    if token_id(token) != stored.token_id:
        return False
    return hmac.compare_digest(_scrypt(token.strip(), stored.salt), stored.digest)
