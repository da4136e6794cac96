"""The byte budget's accounting of a stream's later messages (service/guard.py: ByteBudget, RpcScope.charge).

A call is admitted with room reserved for its largest first message, a promise of room rather than bytes read.
A stream's later message that arrives while other calls' promises fill the tenant's share is taken, as long as
the bytes actually read stay within the limits; bytes actually read past them are still refused. (A CI run cut a
well-behaved live game with RESOURCE_EXHAUSTED on its second message while two of its tenant's calls had just
been admitted.)"""

from __future__ import annotations

from service.guard import ByteBudget, Principal, RpcScope

MAX_MESSAGE = 16
TENANT = Principal("acme", frozenset({"submit"}))


def admitted(budget: ByteBudget) -> RpcScope:
    """A call as Guard._admit leaves it: room for its largest first message reserved and promised."""
    scope = RpcScope("", "VerifyLive", TENANT, budget=budget)
    assert budget.try_take(MAX_MESSAGE, TENANT.tenant)
    budget.promise(MAX_MESSAGE, TENANT.tenant)
    scope.reserved = MAX_MESSAGE
    return scope


def test_a_later_message_is_taken_past_other_calls_promises() -> None:
    budget = ByteBudget(64, tenant_share=32)
    stream = admitted(budget)
    assert stream.charge(3) is None  # its first message: from its own reservation
    stream.release_received()  # (the worker has it)
    others = [admitted(budget), admitted(budget)]  # two calls of the tenant admitted, their messages not read
    assert budget.by_tenant["acme"] == 32 and not budget.room_for(5, "acme")
    assert stream.charge(5) is None  # the stream's second message: taken
    assert budget.by_tenant["acme"] == 37 and budget.unread_by_tenant["acme"] == 32
    # the promises are kept as the others' first messages come: what is held is what was read
    for scope in others:
        assert scope.charge(2) is None
    assert budget.unread == 0 and budget.by_tenant["acme"] == 9 == budget.used
    for scope in (stream, *others):
        scope.release_all()
    assert budget.used == 0 and not budget.by_tenant and not budget.unread_by_tenant


def test_bytes_actually_read_past_the_share_are_still_refused() -> None:
    budget = ByteBudget(64, tenant_share=40)
    stream = admitted(budget)
    assert stream.charge(16) is None
    assert stream.charge(8) is None  # 24 read
    admitted(budget)  # a promise of 16: the share is full
    refusal = stream.charge(20)  # 44 read would be past the share of 40
    assert refusal is not None and "its share: 40" in refusal
    assert stream.charge(10) is None  # 34 read: within it
    assert budget.by_tenant["acme"] == 50 and budget.unread_by_tenant["acme"] == 16


def test_a_first_message_never_goes_past_the_promises() -> None:
    budget = ByteBudget(64, tenant_share=32)
    admitted(budget)
    admitted(budget)
    late = RpcScope("", "VerifyLive", TENANT, budget=budget)  # admitted without room: its first message
    assert late.charge(1) is not None
