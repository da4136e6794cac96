"""The byte budget's accounting of a stream's later messages (service/guard.py: ByteBudget, RpcScope.charge).

A call is admitted with room reserved for its largest first message, a promise of room rather than bytes read.
A stream's later message that arrives while other calls' promises fill the tenant's share is taken, as long as
the bytes actually read stay within the limits; bytes actually read past them are still refused. (A CI run cut a
well-behaved live game with RESOURCE_EXHAUSTED on its second message while two of its tenant's calls had just
been admitted.) A promised message that comes after its room was so taken is taken only if it still fits among
the bytes read, else refused: what is held never passes the budget or a tenant's share (without this, one tenant
could hold the whole budget, its streams' messages and then its promised ones, and shut the others out)."""

from __future__ import annotations

import asyncio

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


def test_promised_messages_that_no_longer_fit_are_refused_so_a_tenant_holds_at_most_its_share() -> None:
    # the attack: a tenant's streams read past its promised room, then its promised messages come at their largest
    budget = ByteBudget(64, tenant_share=32)
    stream = admitted(budget)
    assert stream.charge(1) is None
    stream.release_received()
    promised = [admitted(budget), admitted(budget)]  # 32 promised: the share
    assert stream.charge(16) is None  # read past the promises: 16 read
    assert budget.overbooked_by_tenant["acme"] == 16
    first, second = promised
    assert first.charge(16) is None  # 16 read + 16 = the share: still fits
    assert second.charge(1) is not None  # 32 read: one more byte would pass the share, refused and not held
    assert second.held == 0
    held = budget.by_tenant["acme"] - budget.unread_by_tenant["acme"]
    assert held == 32 == budget.used and budget.unread == 0 and not budget.overbooked_by_tenant
    # another tenant still finds its half
    assert budget.try_take(32, "other")


def test_the_room_a_promised_message_leaves_makes_up_for_room_taken() -> None:
    budget = ByteBudget(64, tenant_share=32)
    stream = admitted(budget)
    assert stream.charge(2) is None
    stream.release_received()
    promised = [admitted(budget), admitted(budget)]
    assert stream.charge(12) is None  # 12 read, past the promises
    assert budget.overbooked_by_tenant["acme"] == 12
    assert promised[0].charge(4) is None  # its 12 unused bytes make up for the 12 taken
    assert not budget.overbooked_by_tenant
    assert promised[1].charge(16) is None  # its room is its own again: taken whole
    assert budget.by_tenant["acme"] == 32 == budget.used


def test_room_taken_of_another_tenants_promise_is_made_up_for_in_the_budget() -> None:
    budget = ByteBudget(40, tenant_share=32)
    stream = admitted(budget)
    assert stream.charge(16) is None  # acme: 16 read
    other = Principal("other", frozenset({"submit"}))
    theirs = RpcScope("", "VerifyLive", other, budget=budget)
    assert budget.try_take(MAX_MESSAGE, "other")
    budget.promise(MAX_MESSAGE, "other")
    theirs.reserved = MAX_MESSAGE
    assert budget.used == 32 and not budget.room_for(MAX_MESSAGE, "acme")
    assert stream.charge(16) is None  # acme: 32 read, within its share and the budget's bytes read
    assert budget.overbooked == 8 and not budget.overbooked_by_tenant
    assert budget.fits_read(8, "other")  # 32 read: 8 more would fit,
    refusal = theirs.charge(9)  # 9 would pass the budget of 40
    assert refusal is not None and theirs.held == 0
    assert budget.used == 32 and budget.overbooked == 0


def test_without_room_taken_a_promised_message_is_taken_even_past_the_turns_reading() -> None:
    budget = ByteBudget(32, tenant_share=32)
    promised = admitted(budget)
    turn = admitted(budget)
    assert turn.charge(16) is None
    budget.turn = turn
    assert turn.charge(16) is None  # the turn reads on past the budget
    assert budget.used == budget.limit and budget.past == 16 and not budget.overbooked
    assert promised.charge(16) is None  # its room was set aside before: taken as promised


# ---------------------------------------------------------------------------------------- issue 43, N1

def test_what_the_turn_reads_past_the_budget_leaves_the_others_their_room() -> None:
    """One tenant's stream with the turn reads a game larger than its share: what does not fit is counted past
    the budget (``past``), not in it, so another tenant's calls find their half however long the stream holds it
    (it sent 56 MiB and went quiet, or a viewer upload dribbled its declared 64 MiB: every other tenant's call
    waited 30 s and was refused)."""
    budget = ByteBudget(64, tenant_share=32)
    stream = admitted(budget)
    assert stream.charge(16) is None
    assert stream.charge(16) is None  # 32: the share
    assert not budget.room_for(16, "acme")
    budget.turn = stream  # (room_or_turn gave it the turn)
    for _ in range(3):
        assert stream.charge(8) is None  # 24 more, past the share
    assert budget.by_tenant["acme"] == 32 == budget.used and budget.past == 24 == stream.past
    assert stream.held == 32 and stream.peak == 56
    other = Principal("bravo", frozenset({"submit"}))
    assert budget.try_take(32, other.tenant)  # the other tenant's half is whole
    budget.release(32, other.tenant)
    stream.release_all()
    assert budget.used == budget.past == 0 and budget.turn is None and not budget.by_tenant


def test_the_turn_takes_room_where_it_fits_and_reads_past_only_what_does_not() -> None:
    budget = ByteBudget(64, tenant_share=32)
    stream = admitted(budget)
    budget.turn = stream
    assert stream.charge(16) is None and stream.charge(10) is None  # fits: in the budget
    assert budget.past == 0 and budget.by_tenant["acme"] == 26
    assert stream.charge(10) is None  # 36 would pass the share: past it
    assert budget.past == 10 and budget.by_tenant["acme"] == 26
    stream.release_received()  # a live game's batch, handed on: the turn passes, nothing held
    assert budget.past == 0 == budget.used and budget.turn is None


# ---------------------------------------------------------------------------------------- issue 43, N7

def test_an_uploads_next_message_keeps_the_room_it_was_seen_to_have() -> None:
    """The guard reads an upload's next message once it has room for it (Guard._gated), and holds that room until
    the message comes: another stream's message, read meanwhile, cannot take it and have this one refused
    mid-upload (4 of 8 concurrent 60 MiB uploads of two tenants were refused so)."""
    budget = ByteBudget(64, tenant_share=32)
    upload = admitted(budget)
    upload.method = "UploadLog"
    assert upload.charge(2) is None
    other = admitted(budget)
    assert other.charge(2) is None
    assert budget.try_take(MAX_MESSAGE, "acme", before_waiters=True)  # (as _gated holds it: room seen)
    upload.next_room = MAX_MESSAGE
    assert other.charge(12) is None  # 2 + 2 + 16 held + 12 = the share
    assert upload.charge(14) is None  # came: taken from the room held for it, the rest given back
    assert budget.by_tenant["acme"] == 30 == budget.used and upload.next_room == 0 and upload.held == 16
    assert budget.try_take(MAX_MESSAGE, "acme", before_waiters=True) is False  # (the share: room for none more)
    for scope in (upload, other):
        scope.release_all()
    assert budget.used == 0 and not budget.by_tenant


def test_room_granted_to_a_first_message_is_promised_at_once() -> None:
    """A waiting call's room is promised the moment it is granted, not when the call runs again: a stream's later
    message coming in between must find it a promise (to read past, within the bytes read), not bytes read."""
    async def run() -> None:
        budget = ByteBudget(32, tenant_share=32)
        assert budget.try_take(32, "acme")
        waiter = asyncio.ensure_future(budget.reserve(16, 5.0, "bravo", promised=True))
        await asyncio.sleep(0)
        budget.release(32, "acme")  # granted here, in the release
        assert budget.unread == 16 == budget.unread_by_tenant["bravo"] and not waiter.done()
        assert await waiter
        budget.keep_promise(16, "bravo")
        budget.release(16, "bravo")
        assert budget.used == budget.unread == 0

    asyncio.run(run())


def test_a_waiter_waits_on_while_the_budget_moves_and_not_while_it_stands_still() -> None:
    """The wait for room (BUDGET_WAIT_SECONDS, 30 s) counts from the budget's last move: uploads ahead being read
    in turn keep a queued one waiting; a holder that sends nothing does not."""
    async def run() -> tuple[bool, bool]:
        budget = ByteBudget(32, tenant_share=32)
        assert budget.try_take(32, "acme")
        still = await budget.reserve(16, 0.3, "bravo")  # nothing moves: refused
        waiter = asyncio.ensure_future(budget.reserve(16, 0.3, "bravo"))
        for _ in range(100):  # 1 s of moving: bytes read and given back, 10 ms apart
            await asyncio.sleep(0.01)
            budget.release(1, "acme")
            assert budget.try_take(1, "acme", before_waiters=True)
        assert not waiter.done()
        budget.release(32, "acme")
        return still, await waiter

    assert asyncio.run(run()) == (False, True)
