"""The tool index in S3, so a cold start with a remote embedder does not embed the catalogue again.

Objects live in TRANSCRIPTS_BUCKET under `cache/tool-index/<key>.json`, where the key hashes the
tools' embed texts and the embedder's identity: a changed catalogue or embedder reads a new key.
Enabled with TOOL_INDEX_CACHE=true; failures are logged by the caller and never stop selection.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from rag_orchestrator.aws import error_code

PREFIX = "cache/tool-index/"


class S3VectorCache:
    def __init__(self, bucket: str, client: Any, prefix: str = PREFIX) -> None:
        self.bucket = bucket
        self.prefix = prefix
        # S3's GetObject and PutObject (AwsClients.objects), made on first use (AwsClients.lazy)
        self.client = client

    def object_key(self, key: str) -> str:
        return f"{self.prefix}{key}.json"

    def load(self, key: str) -> dict[str, list[float]] | None:
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self.object_key(key))
        except ClientError as exc:
            if error_code(exc) == "NoSuchKey":
                return None
            raise
        document = json.loads(response["Body"].read())
        vectors = document.get("vectors")
        return vectors if isinstance(vectors, dict) else None

    def store(self, key: str, vectors: dict[str, list[float]]) -> None:
        rounded = {name: [round(v, 6) for v in vector] for name, vector in vectors.items()}
        self.client.put_object(
            Bucket=self.bucket,
            Key=self.object_key(key),
            Body=json.dumps({"vectors": rounded}, separators=(",", ":")).encode(),
            ContentType="application/json",
        )
