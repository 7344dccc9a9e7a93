"""S3's GetObject and PutObject without boto3 (docs/performance.md, "Requests without boto3").

What a function reads when it starts — a tool catalogue or MCP_SERVERS in S3 (tools/catalog_source.py)
— and the tool index's cache (tools/index_cache.py) are one GetObject or PutObject each; importing boto3
and making its S3 client for them cost a cold start ~0.23 s of CPU. This client sends what boto3's would:

- the bucket addressed as botocore addresses it: by virtual host (`https://<bucket>.s3.<region>.
  amazonaws.com/<key>`, `<bucket>.s3.amazonaws.com` in us-east-1) where its name allows (3 to 63
  lower-case letters, digits and hyphens), else in the path; in the path on an endpoint of
  AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (the moto server, MinIO, LocalStack);
- the key escaped once (`/` and `~` kept), signed with SigV4 for `s3` over the payload's SHA-256
  (`X-Amz-Content-SHA256`);
- a bucket in another region: S3's redirect (its `x-amz-bucket-region`, or the error's `Region`) followed
  once and remembered, as botocore's redirector does;
- retries and connection errors as the other clients without boto3 (aws_wire.py); S3's XML errors as
  botocore parses them: `ClientError` with `Error.Code` (`NoSuchKey`, `AccessDenied`…), `Error.Message`
  and the error's other fields, `RequestId` and `HostId` in `ResponseMetadata`;
- `meta.events` as a boto3 client's (aws_events.py).

It returns what callers read: `Body` (`.read()`), `ContentType`, `ContentLength`, `ETag`, `VersionId`
where the bucket keeps versions, `ResponseMetadata`. `AwsClients.objects()` (aws.py) gives it where the
environment holds credentials and a region; elsewhere boto3's S3 client, which has both operations.
"""

from __future__ import annotations

import hashlib
import http.client
import io
import os
import re
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

from botocore.exceptions import ClientError

from rag_orchestrator.aws_events import Meta, Observed
from rag_orchestrator.aws_sigv4 import Credentials, Signer
from rag_orchestrator.aws_wire import SignedClient, exchange, response_metadata
from rag_orchestrator.http_pool import Answer, Request, Wire, wire_for

# A bucket name botocore addresses by virtual host: 3 to 63 lower-case letters, digits and hyphens.
_VIRTUAL_HOST = re.compile(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")
_REDIRECTS = (301, 307, 400)  # S3's answers to a request for a bucket of another region


class S3Objects(SignedClient):
    """S3's `get_object` and `put_object`, over pooled connections to each bucket's endpoint: the
    endpoint's own (SignedClient's) where buckets are in the path, a bucket's host where it is its own."""

    names = ("s3", "S3", "s3")  # its endpoint's prefix and variable, its signing name

    def __init__(self, credentials: Credentials, region: str, **options: Any) -> None:
        """`options`: SignedClient's timeouts and attempts."""
        super().__init__(credentials, region, **options)
        configured = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        self._custom = self.url.rstrip("/") if configured else None  # an endpoint of its own: path-style
        self.region = region
        self.meta = Meta("s3", region, self.url)
        self._regions: dict[str, str] = {}  # bucket -> its region, once S3 said it is another
        self._signers = {region: self._signer}
        self._wires = {self._origin: self._wire}  # by origin
        self._lock = threading.Lock()

    def get_object(self, *, Bucket: str, Key: str) -> dict[str, Any]:
        """The object: its bytes as `Body`; botocore's ClientError (`NoSuchKey`…) when S3 refuses."""
        answer, parsed = self._call("GetObject", "GET", Bucket, Key, None, {})
        headers = answer.headers
        return {
            **parsed,
            "Body": io.BytesIO(answer.body),
            "ContentLength": int(headers.get("content-length", len(answer.body))),
            "ContentType": headers.get("content-type", ""),
        }

    def put_object(
        self, *, Bucket: str, Key: str, Body: bytes | str, ContentType: str | None = None
    ) -> dict[str, Any]:
        """Store `Body` (bytes, or text as UTF-8) under the key."""
        data = Body.encode() if isinstance(Body, str) else bytes(Body)
        headers = {"Content-Type": ContentType} if ContentType else {}
        return self._call("PutObject", "PUT", Bucket, Key, data, headers)[1]

    def close(self) -> None:
        with self._lock:
            wires, self._wires = list(self._wires.values()), {}
        for wire in wires:  # the endpoint's own among them
            wire.close()

    def address(self, bucket: str, key: str, region: str) -> tuple[str, str]:
        """The origin and escaped path botocore sends a request for `key` of `bucket` to."""
        escaped = quote(key, safe="/~")
        if self._custom is not None:
            return _origin_and_root(self._custom, f"/{quote(bucket, safe='~')}/{escaped}")
        suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
        service = "s3" if region == "us-east-1" else f"s3.{region}"  # us-east-1: S3's global endpoint
        if _VIRTUAL_HOST.fullmatch(bucket):
            return f"https://{bucket}.{service}.{suffix}", f"/{escaped}"
        return f"https://{service}.{suffix}", f"/{quote(bucket, safe='~')}/{escaped}"

    def _call(
        self, operation: str, method: str, bucket: str, key: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[Answer, dict[str, Any]]:
        params: dict[str, Any] = {"Bucket": bucket, "Key": key}
        if body is not None:
            params["Body"] = body
        call = Observed(self.meta.events, "s3", operation, params)
        sent = {**headers, "X-Amz-Content-SHA256": hashlib.sha256(body or b"").hexdigest()}
        region = self._regions.get(bucket, self.region)
        origin, path = self.address(bucket, key, region)
        call.before(method, origin + path, path, sent, body)
        for redirected in (False, True):
            send = self._sender(call, method, origin, path, sent, body, region)
            answer, attempt, error = exchange(send, operation, origin, self.max_attempts, error_of=_error)
            moved = answer.headers.get("x-amz-bucket-region") or (
                error and error.response["Error"].get("Region")
            )
            if redirected or error is None or not moved or moved == region or answer.status not in _REDIRECTS:
                break
            # As botocore's redirector: asked again in the bucket's region, which is remembered.
            self._regions[bucket] = region = moved
            origin, path = self.address(bucket, key, region)
        parsed = _metadata(answer, attempt) if error is None else error.response
        if error is None and answer.headers.get("etag"):
            parsed["ETag"] = answer.headers["etag"]
        if error is None and answer.headers.get("x-amz-version-id"):
            parsed["VersionId"] = answer.headers["x-amz-version-id"]
        call.after(answer, parsed)
        if error is not None:
            raise error
        return answer, parsed

    def _sender(
        self,
        call: Observed,
        method: str,
        origin: str,
        path: str,
        headers: dict[str, str],
        body: bytes | None,
        region: str,
    ) -> Callable[[], Answer]:
        signer, wire = self._signer_for(region), self._wire_to(origin)

        def send() -> Answer:
            call.sending()
            signed = signer.headers(method, origin + path, headers, body or b"")
            return wire.send(Request(method, path, body, self._timeout, signed))

        return send

    def _signer_for(self, region: str) -> Signer:
        with self._lock:
            if region not in self._signers:
                self._signers[region] = Signer(self._signer.credentials, region, "s3")
            return self._signers[region]

    def _wire_to(self, origin: str) -> Wire:
        with self._lock:
            if origin not in self._wires:
                self._wires[origin] = wire_for(origin, "", {})
            return self._wires[origin]


def _origin_and_root(url: str, path: str) -> tuple[str, str]:
    """A configured endpoint's origin, and `path` under the endpoint's own path."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/") + path


def _metadata(answer: Answer, attempt: int) -> dict[str, Any]:
    """`ResponseMetadata` as botocore gives an S3 answer's: S3's request id and host id."""
    metadata = response_metadata(answer, attempt)
    metadata["RequestId"] = answer.headers.get("x-amz-request-id", "")
    metadata["HostId"] = answer.headers.get("x-amz-id-2", "")
    return {"ResponseMetadata": metadata}


def _error(operation: str, answer: Answer, attempt: int) -> ClientError:
    """S3's error as botocore parses it: the `<Error>` document's fields, its `RequestId` and `HostId`
    moved to the metadata; an answer without one, its status and the status's reason."""
    error = {"Code": str(answer.status), "Message": http.client.responses.get(answer.status, "")}
    if answer.body:
        from xml.etree import ElementTree

        try:
            root = ElementTree.fromstring(answer.body)
        except ElementTree.ParseError:
            root = None
        if root is not None and root.tag == "Error":
            error = {
                child.tag: child.text or "" for child in root if child.tag not in ("RequestId", "HostId")
            }
    return ClientError({"Error": error, **_metadata(answer, attempt)}, operation)
