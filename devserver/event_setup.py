"""What a sample event needs on the local stack before `make invoke` runs it.

- An S3 event's objects are uploaded first from `events/objects/<key>` when the bucket lacks them.
- An S3 event on `attachments/<caller>/…` gets a real attachment: a conversation of that caller, the
  attachment declared through the API and `events/objects/attachments/notes.md` uploaded with the
  presigned POST it returns, the event then naming that object.
- An HTTP event on `/api/v1/chat/conversations/<id>/…` whose conversation the caller cannot see (a
  sample's id exists nowhere locally) gets a new conversation of that caller, and is sent there.
The caller is whoever the event's headers authenticate: `x-caller-id` under `make dev`'s AUTH_MODE=dev.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from devserver.stack import ROOT

OBJECTS = ROOT / "events" / "objects"
CONVERSATION_PATH = re.compile(r"^/api/v1/chat/conversations/([0-9a-fA-F-]{36})(?=/|$)")
CHAT = "/api/v1/chat/conversations"


def upload_missing_objects(event: dict[str, Any]) -> None:
    from botocore.exceptions import ClientError

    from rag_orchestrator.api.deps import process_aws

    s3 = process_aws().client("s3")  # the clients of the apps this tool builds
    for record in event.get("Records", []):
        bucket, key = record["s3"]["bucket"]["name"], record["s3"]["object"]["key"]
        try:
            s3.head_object(Bucket=bucket, Key=key)
            continue
        except ClientError:
            pass
        source = OBJECTS / key
        if not source.is_file():
            raise SystemExit(f"error: s3://{bucket}/{key} does not exist and there is no {source} to upload")
        s3.put_object(Bucket=bucket, Key=key, Body=source.read_bytes())
        print(f"uploaded {source.relative_to(ROOT)} to s3://{bucket}/{key}", file=sys.stderr)


def ensure_conversation(event: dict[str, Any]) -> dict[str, Any]:
    """The event, sent to a conversation of its caller: the one it names if it exists, else a new one."""
    path = event.get("rawPath") or ""
    match = CONVERSATION_PATH.match(path)
    if not match:
        return event
    from fastapi.testclient import TestClient

    from rag_orchestrator.api.app import create_app

    headers = {k: v for k, v in (event.get("headers") or {}).items() if k in ("authorization", "x-caller-id")}
    with TestClient(create_app(["conversations"]), headers=headers) as client:
        if client.get(f"{CHAT}/{match.group(1)}").status_code == 200:
            return event
        created = client.post(CHAT, json={})
        if created.status_code != 201:
            raise SystemExit(f"error: cannot create a conversation for this event: {created.text}")
    new_id = created.json()["conversationId"]
    print(
        f"conversation {match.group(1)} is not on the local stack: sending the event to new {new_id}",
        file=sys.stderr,
    )
    rewritten = path.replace(match.group(1), new_id, 1)
    http = {**event["requestContext"]["http"], "path": rewritten}
    return {**event, "rawPath": rewritten, "requestContext": {**event["requestContext"], "http": http}}


def declare_attachments(event: dict[str, Any]) -> dict[str, Any]:
    """Each record under attachments/ rewritten to an attachment uploaded as the app would."""
    import httpx
    from fastapi.testclient import TestClient

    from rag_orchestrator.api.app import create_app

    sample = OBJECTS / "attachments" / "notes.md"
    records = []
    for record in event["Records"]:
        key = record["s3"]["object"]["key"]
        if not key.startswith("attachments/"):
            records.append(record)
            continue
        headers = {"x-caller-id": key.split("/")[1]}
        with TestClient(create_app(["conversations", "attachments"]), headers=headers) as client:
            conversation = client.post(CHAT, json={}).json()["conversationId"]
            declared = {
                "fileName": sample.name,
                "contentType": "text/markdown",
                "sizeBytes": sample.stat().st_size,
            }
            created = client.post(f"{CHAT}/{conversation}/attachments", json=declared).json()
        upload = created["upload"]
        files = {"file": (sample.name, sample.read_bytes(), "text/markdown")}
        httpx.post(upload["url"], data=upload["fields"], files=files).raise_for_status()
        new_key = upload["fields"]["key"]
        print(f"uploaded {sample.relative_to(ROOT)} as attachment {created['attachmentId']}", file=sys.stderr)
        s3 = {**record["s3"], "object": {**record["s3"]["object"], "key": new_key}}
        records.append({**record, "s3": s3})
    return {**event, "Records": records}


def prepare(event: dict[str, Any]) -> dict[str, Any]:
    if "Records" in event:
        event = declare_attachments(event)
        upload_missing_objects(event)
        return event
    if "requestContext" in event:
        return ensure_conversation(event)
    return event
