"""Who may call the server: a bearer token (metadata ``authorization: Bearer <token>``)
and TLS, optionally mutual.

With a token, two discovery services stay open: health (probes need no secret) and
reflection, v1alpha and v1 (it serves only the public schema, the same on every mta
server, so that tools such as grpcurl or a client generating its stubs can find the
service before they have a token). Everything about this server's windows and
configuration needs the token, ``Describe`` included: the monoids and policies of its
plugins are the operator's, and a client that cannot create windows has no use for them."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable

import grpc
from grpc_health.v1 import health

from mta.service import reflection

#: Method prefixes callable without the token.
OPEN_SERVICES = tuple(f"/{name}/" for name in (health.SERVICE_NAME, reflection.ALPHA, reflection.V1))


class TokenCheck(grpc.aio.ServerInterceptor):
    """Refuses calls without the token with UNAUTHENTICATED (constant-time comparison)."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("the token must not be empty")
        self._expected = f"Bearer {token}".encode()

    async def intercept_service(self, continuation: Callable[[Any], Awaitable[grpc.RpcMethodHandler]],
                                details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        if details.method.startswith(OPEN_SERVICES):
            return await continuation(details)
        given = dict(details.invocation_metadata or ()).get("authorization", "")
        if hmac.compare_digest(given.encode(), self._expected):
            return await continuation(details)
        handler = await continuation(details)
        return _refusal(handler)


def _refusal(handler: grpc.RpcMethodHandler | None) -> grpc.RpcMethodHandler:
    async def deny(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token (metadata authorization)")

    async def deny_stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token (metadata authorization)")
        yield  # pragma: no cover - makes this an async generator

    if handler is None:
        return grpc.unary_unary_rpc_method_handler(deny)
    kinds = {(False, False): grpc.unary_unary_rpc_method_handler, (False, True): grpc.unary_stream_rpc_method_handler,
             (True, False): grpc.stream_unary_rpc_method_handler, (True, True): grpc.stream_stream_rpc_method_handler}
    make = kinds[(handler.request_streaming, handler.response_streaming)]
    return make(deny_stream if handler.response_streaming else deny,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)


@dataclass(frozen=True)
class Tls:
    """Server certificate and key (PEM files); with ``client_ca``, clients must present a
    certificate signed by it (mutual TLS)."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    def credentials(self) -> grpc.ServerCredentials:
        ca = self.client_ca.read_bytes() if self.client_ca else None
        return grpc.ssl_server_credentials([(self.key.read_bytes(), self.cert.read_bytes())],
                                           root_certificates=ca, require_client_auth=ca is not None)
