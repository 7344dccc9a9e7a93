"""Amazon Transcribe: an asynchronous job on the S3 object, polled within the function's time.

The job is named after the attachment, so a retried invocation finds the job it started before
instead of paying for a second one. Transcribe writes its result under `transcribe/` in the same
bucket (outside the prefix that triggers AttachmentFunction); it is read, then deleted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from rag_orchestrator.attachments.uploads import AUDIO_FORMATS, EngineUnavailable, UnreadableFile, Upload
from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings
from rag_orchestrator.observability import logger

OUTPUT_PREFIX = "transcribe/"
FIRST_POLL_SECONDS, MAX_POLL_SECONDS = 1.0, 5.0


def job_name(key: str) -> str:
    """`attachments/<caller>/<conversation>/<attachmentId>` -> `attachment-<attachmentId>`."""
    return "attachment-" + key.rsplit("/", 1)[-1]


class AwsTranscriber:
    def __init__(
        self,
        transcribe: Any,
        s3: Any,
        *,
        language: str,
        timeout_seconds: float,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._transcribe = transcribe
        self._s3 = s3
        self._language = language
        self._timeout = timeout_seconds
        self._sleep = sleep

    @classmethod
    def from_settings(cls, settings: Settings, aws: AwsClients) -> AwsTranscriber:
        return cls(
            aws.lazy("transcribe"),
            aws.lazy("s3"),
            language=settings.attachment_transcribe_language,
            timeout_seconds=settings.attachment_processing_timeout_seconds,
        )

    def transcribe(self, upload: Upload) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        name = job_name(upload.key)
        output_key = f"{OUTPUT_PREFIX}{name}.json"
        try:
            self._start(name, upload, output_key)
            job = self._wait(name)
            if job["TranscriptionJobStatus"] == "FAILED":
                logger.warning("transcription failed", extra={"reason": job.get("FailureReason", "")[:200]})
                raise UnreadableFile("the audio could not be transcribed")
            result = self._s3.get_object(Bucket=upload.bucket, Key=output_key)["Body"].read()
            self._s3.delete_object(Bucket=upload.bucket, Key=output_key)
        except (ClientError, BotoCoreError) as exc:
            logger.warning("transcribe call failed", extra={"error_type": type(exc).__name__})
            raise EngineUnavailable("the speech engine did not answer") from None
        return transcript_of(result)

    def _start(self, name: str, upload: Upload, output_key: str) -> None:
        from botocore.exceptions import ClientError

        try:
            self._transcribe.start_transcription_job(
                TranscriptionJobName=name,
                LanguageCode=self._language,
                MediaFormat=AUDIO_FORMATS[upload.content_type],
                Media={"MediaFileUri": f"s3://{upload.bucket}/{upload.key}"},
                OutputBucketName=upload.bucket,
                OutputKey=output_key,
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConflictException":
                raise
            # A job of this name exists: an earlier attempt started it. Wait for that one.

    def _wait(self, name: str) -> dict[str, Any]:
        deadline = time.monotonic() + self._timeout
        pause = FIRST_POLL_SECONDS
        while True:
            job = self._transcribe.get_transcription_job(TranscriptionJobName=name)["TranscriptionJob"]
            if job["TranscriptionJobStatus"] in ("COMPLETED", "FAILED"):
                return job
            if time.monotonic() + pause > deadline:
                raise EngineUnavailable("the transcription took too long")
            self._sleep(pause)
            pause = min(pause * 1.5, MAX_POLL_SECONDS)


def transcript_of(result: bytes) -> str:
    """The text of Transcribe's output JSON (`results.transcripts[*].transcript`)."""
    try:
        transcripts = json.loads(result)["results"]["transcripts"]
        return "\n".join(t["transcript"] for t in transcripts if t.get("transcript")).strip()
    except (ValueError, KeyError, TypeError):
        raise EngineUnavailable("the speech engine answered without a transcript") from None
