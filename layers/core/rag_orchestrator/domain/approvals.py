"""Human approval of tool calls (docs/approvals.md): a held call, and how it was decided.

A catalogue tool with `approval: required` is not run when the model calls it: the turn ends
`awaiting_approval` with the call held here, until its caller approves or denies it, or it expires
(APPROVAL_TTL_MINUTES), which counts as a denial.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from rag_orchestrator.domain.audit import digest
from rag_orchestrator.domain.messages import FunctionCall, Message, Role, ToolCall

Decision = Literal["approve", "deny"]
# What became of a held call: the status of its APPROVAL# item once it left PENDING.
Outcome = Literal["approved", "denied", "expired"]
PENDING = "pending"
OUTCOMES: dict[Decision, Outcome] = {"approve": "approved", "deny": "denied"}
NOT_RUN = (
    "Not run: another action in this step is waiting for the user's approval; ask again after it is decided."
)


@dataclass(frozen=True, slots=True)
class HeldCall:
    """A tool call waiting for a decision: what the decision route needs to run it later."""

    approval_id: str
    conversation_id: str
    caller_id: str
    turn_id: str
    tool_name: str
    tool_call_id: str
    arguments: str  # the model's arguments, as it sent them (JSON text)
    decide_by: int  # epoch seconds: undecided by then, it is denied
    context_type: str | None = None  # the asking request's, for the tool's contextParams when it runs
    context: dict[str, Any] = field(default_factory=dict)

    def call(self) -> ToolCall:
        return ToolCall(
            id=self.tool_call_id, function=FunctionCall(name=self.tool_name, arguments=self.arguments)
        )

    def to_item(self) -> dict[str, Any]:
        return {
            "approvalId": self.approval_id,
            "conversationId": self.conversation_id,
            "callerId": self.caller_id,
            "turnId": self.turn_id,
            "toolName": self.tool_name,
            "toolCallId": self.tool_call_id,
            "arguments": self.arguments,
            "decideBy": self.decide_by,
            "contextType": self.context_type,
            "context": self.context,
        }

    @classmethod
    def from_item(cls, values: dict[str, Any]) -> HeldCall:
        return cls(
            approval_id=values["approvalId"],
            conversation_id=values["conversationId"],
            caller_id=values["callerId"],
            turn_id=values.get("turnId", ""),
            tool_name=values["toolName"],
            tool_call_id=values["toolCallId"],
            arguments=values.get("arguments", "{}"),
            decide_by=int(values["decideBy"]),
            context_type=values.get("contextType"),
            context=dict(values.get("context") or {}),
        )


@dataclass(frozen=True, slots=True)
class Resolution:
    """A held call decided: by its caller (approved, denied with an optional reason) or by expiry."""

    held: HeldCall
    outcome: Outcome
    reason: str | None = None

    @property
    def approved(self) -> bool:
        return self.outcome == "approved"

    def refusal(self) -> str:
        """The tool result the model reads for a call that did not run."""
        if self.outcome == "expired":
            return "Not run: the user did not approve this action in time (the approval expired)."
        said = f" The user's reason: {self.reason}" if self.reason else " The user gave no reason."
        return "Not run: the user denied this action." + said

    def tool_message(self) -> Message:
        """The result the model reads for a call that did not run."""
        held = self.held
        return Message(
            role=Role.TOOL, content=self.refusal(), tool_call_id=held.tool_call_id, tool_name=held.tool_name
        )

    def audit(self) -> dict[str, Any]:
        """The decision as the audit record of the turn that acts on it carries it (docs/audit.md)."""
        return {
            "approvalId": self.held.approval_id,
            "toolName": self.held.tool_name,
            "toolCallId": self.held.tool_call_id,
            "decision": self.outcome,
            "reason": digest(self.reason) if self.reason else None,
        }


def request_audit(held: HeldCall) -> dict[str, Any]:
    """The held call as the audit record of the turn that asked for it carries it."""
    return {
        "approvalId": held.approval_id,
        "toolName": held.tool_name,
        "toolCallId": held.tool_call_id,
        "arguments": digest(held.arguments),
        "decideBy": held.decide_by,
    }
