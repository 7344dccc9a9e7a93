"""The AWS and HTTP backends of the attachment engines: Textract and Transcribe against moto, the caption
model and a Whisper-compatible endpoint against the fake OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from rag_orchestrator.attachments.captions import PROMPT, VisionCaptioner
from rag_orchestrator.attachments.engines import Engines
from rag_orchestrator.attachments.in_process_store import InProcessAttachmentStore
from rag_orchestrator.attachments.objects import AttachmentObjects
from rag_orchestrator.attachments.ocr import TextractReader
from rag_orchestrator.attachments.service import Attachments
from rag_orchestrator.attachments.speech import WhisperTranscriber
from rag_orchestrator.attachments.transcribe import AwsTranscriber
from rag_orchestrator.attachments.uploads import EngineUnavailable, Upload
from rag_orchestrator.config import load_settings
from rag_orchestrator.domain.attachments import Attachment
from tests.fakes.attachments import SPEECH_WAV, render_png
from tests.fakes.fake_llm import FakeLLM, error_reply, text_reply

pytestmark = pytest.mark.integration

BUCKET = "rag-orchestrator-attachments-local"
CALLER, CONVERSATION = "alice", "3f6c1b0e-8d2a-4c55-9b7e-2a4d6e8f0a11"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """moto in-process (its Textract answer is set per test), with the attachments bucket."""
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        clients = {
            name: boto3.client(name, region_name="us-east-1") for name in ("s3", "textract", "transcribe")
        }
        clients["s3"].create_bucket(Bucket=BUCKET)
        yield clients


def uploaded(s3: Any, content_type: str, body: bytes, engines: Engines) -> tuple[Attachments, Attachment]:
    """An attachment whose file is in the bucket, and the service that reads it with `engines`."""
    attachments = Attachments(
        InProcessAttachmentStore(),
        AttachmentObjects(s3, BUCKET),
        load_settings(attachments_bucket=BUCKET, conversation_storage="memory"),
        engines=lambda: engines,
    )
    attachment = Attachment(
        conversation_id=CONVERSATION,
        caller_id=CALLER,
        file_name="f",
        content_type=content_type,
        size_bytes=len(body),
    )
    asyncio.run(attachments.store.create(attachment))
    s3.put_object(Bucket=BUCKET, Key=attachment.key, Body=body, ContentType=content_type)
    return attachments, attachment


def process(attachments: Attachments, attachment: Attachment) -> Attachment:
    return asyncio.run(attachments.ensure_processed(CALLER, CONVERSATION, attachment.attachment_id))


def test_textract_reads_the_lines_of_the_uploaded_image(aws, monkeypatch):
    from moto.textract.models import TextractBackend

    blocks = [
        {"BlockType": "PAGE", "Id": "p"},
        {"BlockType": "LINE", "Id": "l1", "Text": "INVOICE 4711"},
        {"BlockType": "WORD", "Id": "w1", "Text": "INVOICE"},
        {"BlockType": "LINE", "Id": "l2", "Text": "Paid by Alice"},
    ]
    monkeypatch.setattr(TextractBackend, "BLOCKS", blocks)
    sent: list[dict] = []
    aws["textract"].meta.events.register(
        "provide-client-params.textract.DetectDocumentText", lambda params, **_: sent.append(params)
    )
    attachments, attachment = uploaded(
        aws["s3"], "image/png", render_png(["INVOICE 4711"]), Engines(ocr=TextractReader(aws["textract"]))
    )

    done = process(attachments, attachment)

    assert [(s.modality, s.text) for s in done.segments] == [("image-ocr", "INVOICE 4711\nPaid by Alice")]
    assert sent == [{"Document": {"S3Object": {"Bucket": BUCKET, "Name": attachment.key}}}]  # no bytes sent
    assert done.detail == "image-caption: no engine configured"


def test_textract_is_not_asked_about_a_webp(aws):
    webp = b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x00" * 40
    attachments, attachment = uploaded(
        aws["s3"], "image/webp", webp, Engines(ocr=TextractReader(aws["textract"]))
    )
    failed = asyncio.run(attachments.process_object(attachment.key))
    assert failed is not None
    assert (failed.status, failed.detail) == (
        "FAILED",
        "unsupported content: OCR reads PNG and JPEG images only",
    )


def test_transcribe_runs_one_job_on_the_s3_object_and_reads_its_result(aws):
    transcribe, s3 = aws["transcribe"], aws["s3"]
    attachments, attachment = uploaded(
        s3,
        "audio/wav",
        SPEECH_WAV.read_bytes(),
        Engines(
            speech=AwsTranscriber(transcribe, s3, language="en-US", timeout_seconds=60, sleep=lambda _: None)
        ),
    )
    output_key = f"transcribe/attachment-{attachment.attachment_id}.json"

    def write_result_on_completion(parsed: dict, **_: Any) -> None:  # what the service does when a job ends
        job = parsed.get("TranscriptionJob", {})
        if job.get("TranscriptionJobStatus") == "COMPLETED":
            result = {"results": {"transcripts": [{"transcript": "Please bring the quarterly report."}]}}
            s3.put_object(Bucket=BUCKET, Key=output_key, Body=json.dumps(result).encode())

    transcribe.meta.events.register("after-call.transcribe.GetTranscriptionJob", write_result_on_completion)

    done = process(attachments, attachment)

    assert [(s.modality, s.text) for s in done.segments] == [("audio", "Please bring the quarterly report.")]
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix="transcribe/")["KeyCount"] == 0  # read, then deleted
    job = transcribe.get_transcription_job(TranscriptionJobName=f"attachment-{attachment.attachment_id}")
    job = job["TranscriptionJob"]
    assert job["Media"] == {"MediaFileUri": f"s3://{BUCKET}/{attachment.key}"}
    assert (job["MediaFormat"], job["LanguageCode"]) == ("wav", "en-US")


def test_a_retried_transcription_waits_for_the_job_it_started_before(aws):
    transcribe, s3 = aws["transcribe"], aws["s3"]
    upload = Upload(BUCKET, "attachments/alice/c/a1", "audio/mpeg", 10, fetch=lambda: b"")
    transcriber = AwsTranscriber(transcribe, s3, language="en-US", timeout_seconds=60, sleep=lambda _: None)
    transcribe.start_transcription_job(
        TranscriptionJobName="attachment-a1",
        LanguageCode="en-US",
        MediaFormat="mp3",
        Media={"MediaFileUri": f"s3://{BUCKET}/attachments/alice/c/a1"},
        OutputBucketName=BUCKET,
        OutputKey="transcribe/attachment-a1.json",
    )
    s3.put_object(
        Bucket=BUCKET,
        Key="transcribe/attachment-a1.json",
        Body=b'{"results": {"transcripts": [{"transcript": "hello again"}]}}',
    )
    assert transcriber.transcribe(upload) == "hello again"
    assert len(transcribe.list_transcription_jobs()["TranscriptionJobSummaries"]) == 1


def test_the_caption_model_gets_the_image_as_a_content_part(aws):
    png = render_png(["HARBOUR"])
    with FakeLLM() as fake:
        fake.script(text_reply("A white card with the word HARBOUR in black letters."))
        captioner = VisionCaptioner(fake.url, "vision-model", "caption-key")
        attachments, attachment = uploaded(aws["s3"], "image/png", png, Engines(caption=captioner))

        done = process(attachments, attachment)

        (request,) = fake.requests
        (image,) = fake.images
    assert [(s.modality, s.text) for s in done.segments] == [
        ("image-caption", "A white card with the word HARBOUR in black letters.")
    ]
    assert (image.mime, image.data) == ("image/png", png)
    assert request["model"] == "vision-model" and request["stream"] is False
    assert request["messages"][0]["content"][0] == {"type": "text", "text": PROMPT}
    assert fake.headers[0]["authorization"] == "Bearer caption-key"
    assert done.detail == "image-ocr: no engine configured"


def test_a_caption_model_that_fails_leaves_ocr_standing_or_fails_alone(aws):
    png = render_png(["HARBOUR"])
    with FakeLLM() as fake:
        fake.default = error_reply(500, "upstream exploded with secret sk-abcdefghijkl")
        captioner = VisionCaptioner(fake.url, "vision-model", None)
        attachments, attachment = uploaded(aws["s3"], "image/png", png, Engines(caption=captioner))
        failed = process_failed(attachments, attachment)
        assert len(fake.requests) == 2  # one retry of a 5xx
    assert (failed.status, failed.detail) == (
        "FAILED",
        "engine unavailable: the caption model did not answer",
    )


def process_failed(attachments: Attachments, attachment: Attachment) -> Attachment:
    done = asyncio.run(attachments.process_object(attachment.key))
    assert done is not None
    return done


def test_a_whisper_compatible_endpoint_transcribes_any_audio_type(aws):
    with FakeLLM() as fake:
        fake.transcript = "see you at the harbour at nine"
        whisper = WhisperTranscriber(fake.url, "whisper-1", "speech-key")
        ogg = b"OggS" + b"\x00" * 60
        attachments, attachment = uploaded(aws["s3"], "audio/ogg", ogg, Engines(speech=whisper))

        done = process(attachments, attachment)

        (fields,) = fake.audio
    assert [s.text for s in done.segments] == ["see you at the harbour at nine"]
    assert fields["file"] == ("audio.ogg", ogg)
    assert fields["model"] == (None, b"whisper-1")


def test_an_unreachable_whisper_endpoint_is_engine_unavailable():
    whisper = WhisperTranscriber("http://127.0.0.1:9/v1", "whisper-1", None, timeout_seconds=2)
    with pytest.raises(EngineUnavailable):
        whisper.transcribe(Upload(BUCKET, "k", "audio/ogg", 4, fetch=lambda: b"OggS"))
