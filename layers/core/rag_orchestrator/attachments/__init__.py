"""Attachments (docs/attachments.md): presigned uploads, and reading each file once into text segments.

service.Attachments     create / get / ensure_processed / process_object — what routes, turns and
                        AttachmentFunction call
store                   AttachmentStore: DynamoDB (dynamo_store) or in process (in_process_store)
objects                 the attachments bucket: presigned POSTs, HEAD, reads, purges
pipeline                one file into segments, by kind, with the engines of engines.py
documents, ocr, captions, speech, transcribe    one small interface per modality and its backends
"""
