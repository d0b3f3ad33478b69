"""Authentication: who is calling, from a bearer token or (under `--tls`) a client certificate.

The simulator knows a set of tokens, each standing for an `Identity`: its admin (in the group
`system:masters`, which authorization never refuses), tokens registered for test clients, and
tokens minted for stored ServiceAccounts (`system:serviceaccount:<ns>:<name>`, valid while that
ServiceAccount exists). Two modes:

- `lenient` (the default, how kcpsim always behaved): a request with an unknown token or none at
  all acts as the admin; a known token still acts as its own identity.
- `token`: as a real API server with anonymous access limited to the probe paths. An unknown
  token gets 401 everywhere, a request without credentials gets 401 except on `/healthz`,
  `/livez`, `/readyz` and `/version`, where it is `system:anonymous`.

Authorization (what an identity may do) lives in rbac.py and access.py.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

import attrs

from kcpsim.errors import StatusError
from kcpsim.store import Store

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ADMIN_USER = "kcpsim-admin"
PROBE_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})
AUTH_MODES = ("lenient", "token")
_SA_KEY = "/serviceaccounts"


@attrs.frozen
class Identity:
    user: str
    groups: tuple[str, ...] = ()
    # The logical cluster a ServiceAccount lives in ("" the service cluster); None for users.
    cluster: str | None = None

    @property
    def superuser(self) -> bool:
        return MASTERS in self.groups

    def as_user_info(self) -> dict[str, Any]:
        return {"username": self.user, "groups": list(self.groups)}


ANONYMOUS = Identity("system:anonymous", (UNAUTHENTICATED,))


def admin(user: str = ADMIN_USER) -> Identity:
    return Identity(user, (MASTERS, AUTHENTICATED))


def service_account_user(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


@attrs.frozen
class _ServiceAccountToken:
    cluster: str
    namespace: str
    name: str
    uid: str


def unauthorized() -> StatusError:
    """The API server's answer to a request it cannot authenticate."""
    return StatusError(401, "Unauthorized", "Unauthorized")


class Authenticator:
    def __init__(self, *, mode: str = "lenient", admin_token: str | None = None) -> None:
        if mode not in AUTH_MODES:
            raise ValueError(f"unknown authentication mode {mode!r}; one of {', '.join(AUTH_MODES)}")
        self.mode = mode
        self.admin_token = admin_token or secrets.token_urlsafe(24)
        self._tokens: dict[str, Identity] = {self.admin_token: admin()}
        self._service_accounts: dict[str, _ServiceAccountToken] = {}

    def add_token(self, token: str, identity: Identity) -> str:
        """Make `token` stand for `identity` (replacing what it stood for)."""
        if not token or any(c.isspace() for c in token):
            raise ValueError(f"a bearer token must be non-empty without spaces: {token!r}")
        self._tokens[token] = identity
        self._service_accounts.pop(token, None)
        return token

    def add_user(self, token: str, user: str, groups: tuple[str, ...] = ()) -> str:
        """A token for an ordinary (non-admin) user; `system:authenticated` is added to its groups."""
        return self.add_token(token, Identity(user, (*groups, AUTHENTICATED)))

    def ensure_token(self, token: str) -> None:
        """Register an unknown `token` as an admin named after it; a known one keeps its identity.

        The harness gives every client its own token this way, so each is a known identity."""
        if token not in self._tokens and token not in self._service_accounts:
            self.add_token(token, admin(token))

    def mint_service_account_token(
        self, store: Store, *, cluster: str, namespace: str, name: str, token: str | None = None
    ) -> str:
        """A token for a stored ServiceAccount; it stops working once that ServiceAccount is gone."""
        account = store.get(_SA_KEY, cluster, namespace, name)
        if account is None:
            raise KeyError(f"no ServiceAccount {namespace}/{name} in cluster {cluster!r}")
        token = token or secrets.token_urlsafe(24)
        self._tokens.pop(token, None)
        self._service_accounts[token] = _ServiceAccountToken(cluster, namespace, name, account["metadata"]["uid"])
        return token

    def authenticate(
        self, headers: Mapping[str, str], *, path: str, store: Store, certificate: Mapping[str, Any] | None = None
    ) -> Identity:
        """The caller's identity; raises 401 (`token` mode) when it has no valid credentials."""
        header = headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() == "bearer" and token:
            found = self._token_identity(token, store)
            if found is not None:
                return found
            if self.mode == "token":
                raise unauthorized()
            return self._tokens[self.admin_token]
        if certificate:
            return _certificate_identity(certificate)
        if self.mode == "token":
            if path in PROBE_PATHS:
                return ANONYMOUS
            raise unauthorized()
        return self._tokens[self.admin_token]

    def _token_identity(self, token: str, store: Store) -> Identity | None:
        found = self._tokens.get(token)
        if found is not None:
            return found
        account = self._service_accounts.get(token)
        if account is None:
            return None
        stored = store.get(_SA_KEY, account.cluster, account.namespace, account.name)
        if stored is None or stored["metadata"].get("uid") != account.uid:
            return None  # the ServiceAccount was deleted (or deleted and made again): the token is void
        return Identity(
            service_account_user(account.namespace, account.name),
            ("system:serviceaccounts", f"system:serviceaccounts:{account.namespace}", AUTHENTICATED),
            cluster=account.cluster,
        )


def _certificate_identity(certificate: Mapping[str, Any]) -> Identity:
    """The user of a verified client certificate: CN is the name, each O a group (as kube-apiserver)."""
    user = ""
    groups: list[str] = []
    for rdn in certificate.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                user = value
            elif key == "organizationName":
                groups.append(value)
    return Identity(user, (*groups, AUTHENTICATED))
