"""Which keys under a caller's prefix are that caller's: ids with `/` or `#` are other callers."""

from rag_orchestrator.domain.caller_keys import key_caller, owned_by


def test_the_caller_part_is_read_from_the_right():
    assert key_caller("transcripts/X/c1.jsonl", "transcripts/", 1) == "X"
    assert key_caller("transcripts/X/b/c1.jsonl", "transcripts/", 1) == "X/b"
    assert key_caller("transcripts/X#b/c1.jsonl", "transcripts/", 1) == "X#b"
    assert key_caller("transcripts/X//c1.jsonl", "transcripts/", 1) == "X/"
    assert key_caller("attachments/X/c1/a1", "attachments/", 2) == "X"
    assert key_caller("attachments/X/c1/c2/a1", "attachments/", 2) == "X/c1"
    assert key_caller("attachments/auth0|42/c1/a1", "attachments/", 2) == "auth0|42"


def test_a_key_of_another_shape_has_no_caller():
    assert key_caller("audit/X/c1.jsonl", "transcripts/", 1) is None
    assert key_caller("transcripts/c1.jsonl", "transcripts/", 1) is None
    assert key_caller("attachments/X/a1", "attachments/", 2) is None
    assert key_caller("attachments/X/c1/", "attachments/", 2) is None
    assert key_caller("transcripts//c1.jsonl", "transcripts/", 1) is None


def test_only_the_exact_caller_owns_a_key():
    mine = owned_by("X", "attachments/", 2)
    assert mine("attachments/X/c1/a1")
    assert not mine("attachments/X/b/c1/a1")
    assert not mine("attachments/X#b/c1/a1")
    assert not mine("attachments/X/c1/c2/a1")  # caller `X/c1`, under `attachments/X/c1/` too
    assert not mine("attachments/XY/c1/a1")
    assert owned_by("X#b", "transcripts/", 1)("transcripts/X#b/c1.jsonl")
