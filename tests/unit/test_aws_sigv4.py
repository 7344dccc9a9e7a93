"""Our SigV4 signs a request to the same bytes as botocore's SigV4Auth (the reference implementation),
for the requests the JSON client and Bedrock's send: any credentials (with a session token or without), regions,
services, endpoints with and without a port, header values with runs of spaces, any body."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials

from rag_orchestrator.aws_sigv4 import Credentials, Signer, host

MOMENT = datetime(2026, 11, 27, 1, 2, 3, tzinfo=UTC)
KEY, SECRET = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"  # AWS's documentation's example
CASES = [
    ("dynamodb", "us-east-1", "https://dynamodb.us-east-1.amazonaws.com/", None, b'{"TableName":"t"}'),
    ("ssm", "eu-west-3", "https://ssm.eu-west-3.amazonaws.com/", "session/token+==", b'{"Name":"/a/b"}'),
    ("secretsmanager", "ap-south-1", "http://127.0.0.1:5001/", "t", b'{"SecretId":"x"}'),
    ("dynamodb", "cn-north-1", "https://dynamodb.cn-north-1.amazonaws.com.cn:443/", None, b""),
    ("dynamodb", "us-west-2", "http://localhost:8000/", None, '{"S":"h\u00e9\u2603"}'.encode()),
    # Bedrock Runtime's InvokeModel: a path, its model id's ':' escaped (signed escaped again, as botocore)
    (
        "bedrock",
        "us-east-1",
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.titan-embed-text-v2%3A0/invoke",
        "t",
        b'{"inputText":"x"}',
    ),
    ("bedrock", "eu-central-1", "http://127.0.0.1:5001/root/model/a%2Fb%20c~d/invoke", None, b"{}"),
]


def botocore_headers(service, region, url, token, body, headers) -> dict[str, str]:
    """The headers botocore's SigV4Auth adds, at the time it reads from the clock."""
    request = AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
    SigV4Auth(BotoCredentials(KEY, SECRET, token), service, region).add_auth(request)
    return dict(request.headers.items())


@pytest.mark.parametrize(("service", "region", "url", "token", "body"), CASES)
def test_the_signature_is_botocores(service, region, url, token, body):
    headers = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": f"{service}.Op  With   spaces"}
    theirs = botocore_headers(service, region, url, token, body, headers)
    moment = datetime.strptime(theirs["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    signed = Signer(Credentials(KEY, SECRET, token), region, service).headers(
        "POST", url, headers, body, now=moment
    )
    assert signed["Authorization"] == theirs["Authorization"]
    assert signed["X-Amz-Date"] == theirs["X-Amz-Date"]
    assert signed.get("X-Amz-Security-Token") == theirs.get("X-Amz-Security-Token")


def test_the_days_key_is_kept_and_a_new_day_gets_its_own():
    signer = Signer(Credentials("AK", "SK"), "us-east-1", "dynamodb")
    first = signer.headers("POST", "https://x/", {}, b"", now=MOMENT)["Authorization"]
    assert signer.headers("POST", "https://x/", {}, b"", now=MOMENT)["Authorization"] == first
    later = signer.headers("POST", "https://x/", {}, b"", now=MOMENT.replace(day=28))["Authorization"]
    assert "20261128/us-east-1/dynamodb/aws4_request" in later and later != first


def test_the_host_carries_a_port_only_when_not_the_schemes_own():
    assert host("https://dynamodb.us-east-1.amazonaws.com:443/") == "dynamodb.us-east-1.amazonaws.com"
    assert host("http://127.0.0.1:80/") == "127.0.0.1"
    assert host("http://127.0.0.1:5001/") == "127.0.0.1:5001"
    assert host("https://[::1]:8443/") == "[::1]:8443"


def test_a_query_string_is_refused_not_signed_wrong():
    with pytest.raises(ValueError, match="query string"):
        Signer(Credentials("AK", "SK"), "us-east-1", "dynamodb").headers("POST", "https://x/?a=1", {}, b"")
