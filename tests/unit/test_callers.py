"""The role policy (domain/callers.py): roles normalised once, when a Caller is made."""

from rag_orchestrator.domain.callers import ANONYMOUS_CALLER, Caller, normalise_roles, primary_role


def test_moderator_is_mod_and_each_role_counts_once():
    assert Caller("mo", ("moderator", "user", "mod", " ")).roles == ("mod", "user")
    assert normalise_roles([" admin", "moderator"]) == ("admin", "mod")
    assert primary_role(("user", "moderator")) == "mod"
    assert Caller("mo", ("moderator",)).has_any(["mod"]) and Caller("mo", ("mod",)).has_any(["moderator"])


def test_guests_are_anonymous_with_an_identity_of_their_own():
    guest = Caller("guest:" + "a" * 32, ("anonymous",))
    assert guest.anonymous and guest.guest and not guest.may_use_tools
    assert ANONYMOUS_CALLER.anonymous and not ANONYMOUS_CALLER.guest
    assert not Caller("alice").guest and Caller("alice").may_use_tools
