"""The local stand-in for S3's POST policy checks (devserver/s3_post_policy.py)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from devserver.s3_post_policy import Refused, check_upload, signing_key

SECRET = "local"
NOW = 1_800_000_000.0


def form(
    conditions: list, *, expiration: str = "2030-01-01T00:00:00Z", secret: str = SECRET, **fields: str
) -> dict:
    policy = base64.b64encode(
        json.dumps({"expiration": expiration, "conditions": conditions}).encode()
    ).decode()
    credential = "AKID/20270115/us-east-1/s3/aws4_request"
    signature = hmac.new(signing_key(secret, "20270115", "us-east-1", "s3"), policy.encode(), hashlib.sha256)
    return {
        "policy": policy,
        "x-amz-credential": credential,
        "x-amz-signature": signature.hexdigest(),
        "x-amz-algorithm": "AWS4-HMAC-SHA256",
        "x-amz-date": "20270115T000000Z",
        **fields,
    }


SIGNED = [
    {"x-amz-algorithm": "AWS4-HMAC-SHA256"},
    {"x-amz-credential": "AKID/20270115/us-east-1/s3/aws4_request"},
    {"x-amz-date": "20270115T000000Z"},
]
RULES = [
    {"bucket": "b"},
    {"key": "attachments/a"},
    {"content-type": "image/png"},
    ["content-length-range", 1, 100],
    *SIGNED,
]


def refusal(fields: dict, size: int = 10, bucket: str = "b") -> Refused:
    with pytest.raises(Refused) as raised:
        check_upload(bucket, fields, size, SECRET, NOW)
    return raised.value


def test_a_matching_upload_passes():
    check_upload("b", form(RULES, key="attachments/a", **{"content-type": "image/png"}), 100, SECRET, NOW)


def test_sizes_outside_the_range_are_refused_as_s3_refuses_them():
    fields = form(RULES, key="attachments/a", **{"content-type": "image/png"})
    too_large = refusal(fields, size=101)
    assert (too_large.status, too_large.code, too_large.extra["MaxSizeAllowed"]) == (
        "400 Bad Request",
        "EntityTooLarge",
        100,
    )
    assert refusal(fields, size=0).code == "EntityTooSmall"
    assert b"<Code>EntityTooLarge</Code>" in too_large.xml()


def test_changed_fields_extra_fields_other_buckets_and_expiry_are_access_denied():
    good = {"key": "attachments/a", "content-type": "image/png"}
    assert "$key" in refusal(form(RULES, **{**good, "key": "attachments/b"})).message
    assert (
        "$Content-Type"
        in refusal(
            form(
                [*RULES[:2], {"Content-Type": "image/png"}, *RULES[3:]],
                **{**good, "content-type": "text/html"},
            )
        ).message
    )
    assert "Extra input fields: acl" in refusal(form(RULES, **good, acl="public-read")).message
    assert refusal(form(RULES, **good), bucket="other").code == "AccessDenied"
    expired = refusal(form(RULES, expiration="2020-01-01T00:00:00Z", **good))
    assert expired.message == "Invalid according to Policy: Policy expired."
    starts = [["starts-with", "$key", "attachments/"], *RULES[2:], {"bucket": "b"}]
    check_upload("b", form(starts, **good), 10, SECRET, NOW)
    assert check_upload("b", form(RULES, **good, **{"x-ignore-me": "1"}), 10, SECRET, NOW) is None


def test_a_policy_signed_with_another_key_or_changed_after_signing_is_refused():
    good = {"key": "attachments/a", "content-type": "image/png"}
    assert refusal(form(RULES, secret="other", **good)).code == "SignatureDoesNotMatch"
    fields = form(RULES, **good)
    widened = json.loads(base64.b64decode(fields["policy"]))
    widened["conditions"][3] = ["content-length-range", 1, 10**9]
    fields["policy"] = base64.b64encode(json.dumps(widened).encode()).decode()
    assert refusal(fields).code == "SignatureDoesNotMatch"
    assert refusal({**fields, "policy": "not base64 json"}).code == "InvalidPolicyDocument"
