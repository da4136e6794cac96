"""FreeKill's messages -> a game log of our contract (sgsverify.v1).

The conversion reads what the server *showed*: the set-up (seats, roles, generals, the draw
pile, the starting hands), every card used or played (``GameLog`` lines), every card moved with
its real id (``MoveCards``), phases, HP, deaths and the end. Which decision a card was (a use in
one's play phase, an answer to a 杀, a rescue, a 无懈可击 and for whose effect) is read from the
game's own course, never from other players' requests or from replies: a client replay
(``.fk.rep``: one player's requests, no replies) converts exactly like a transcript. Decisions
become our decisions; what the server showed happening becomes recorded outcomes, which the
verifier checks (partial recording: what we do not record, it derives). Declines are left
implicit (docs/log-format.md#implicit-declines).

What cannot be known is left out or inferred from what followed, and the inference is named in
the log's origin notes (e.g. the suit named for 反间 when the record holds no reply).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from importers.freekill.cards import NAMES, CardTable, CardTableError, card_table
from importers.freekill.messages import BY_AI, BY_CLIENT, BY_NONE, NOTIFY, REPLY, REQUEST, Message
from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import all_cards

ENGINE = "freekill"
DEFAULT_VERSION = "88a912f1"

ROLES = {"lord": pb.ROLE_LORD, "loyalist": pb.ROLE_LOYALIST, "rebel": pb.ROLE_REBEL, "renegade": pb.ROLE_SPY}

# FreeKill phases (Player.Phase) -> ours; 1 (round start), 8 (not active) and 9 (between phases) have none.
PHASES = {2: pb.PHASE_START, 3: pb.PHASE_JUDGMENT, 4: pb.PHASE_DRAW, 5: pb.PHASE_PLAY, 6: pb.PHASE_DISCARD,
          7: pb.PHASE_FINISH}
FK_PLAY = 5
FK_DISCARD = 6
# Card areas (Card.Area).
HAND, EQUIP, JUDGE, PROCESSING, DRAW_PILE, DISCARD_PILE, VOID = 1, 2, 3, 5, 6, 7, 8
# Move reasons (fk.ReasonXxx) read here.
R_DRAW, R_GIVE, R_USE, R_RESPONSE, R_JUDGE, R_RECAST = 2, 4, 9, 10, 11, 12
SUIT_CHOICES = {"spade": pb.SUIT_SPADE, "club": pb.SUIT_CLUB, "heart": pb.SUIT_HEART, "diamond": pb.SUIT_DIAMOND}

NATURES = {"normal_damage": pb.DAMAGE_NATURE_NORMAL, "fire_damage": pb.DAMAGE_NATURE_FIRE,
           "thunder_damage": pb.DAMAGE_NATURE_THUNDER}
# FreeKill skill names that differ from ours (after the '#'/'_skill'/'_2_trig' decorations are removed).
SKILL_NAMES = {"tieqi": "tieji", "double_swords": "double_sword", "spear_skill&": "spear", "spear": "spear",
               "nioh_shield": "renwang_shield"}
# Skills and equipment whose log line marks an effect that needs no decision of ours (locked ones), or
# whose decision our log carries elsewhere (view-as skills: in the virtual card; 青龙偃月刀: its 杀).
NOT_DECISIONS = frozenset({
    "crossbow", "guding_blade", "renwang_shield", "silver_lion", "qinggang_sword", "wushuang", "kongcheng",
    "jiuyuan", "paoxiao", "mashu", "qicai", "qianxun", "blade",
    "wusheng", "longdan", "qixi", "guose", "jijiu", "qingguo", "spear",
})
# Effects that give their owner a card without one of theirs (八卦阵's judgment, 护驾/激将's other
# characters): the card FreeKill shows the owner using is in our log as the invocation and its answer.
PROVIDED = frozenset({"eight_diagram", "hujia", "jijiang"})
# The non-delayed tricks (a 无懈可击 window opens for each of their targets).
TRICKS = frozenset({"duel", "dismantlement", "snatch", "ex_nihilo", "collateral", "savage_assault", "archery_attack",
                    "god_salvation", "amazing_grace", "fire_attack", "iron_chain"})
# Cards a skill uses by itself (离间's 决斗): no decision of ours, the skill's settlement makes them.
MADE_BY_SKILLS = frozenset({"lijian"})
# 'luoyi_2_trig' / 'wushuang_2_trig': the +1 damage / the second 闪 at work, not the skill invoked.
EFFECT_LINES = frozenset({"#luoyi_2_trig", "#wushuang_2_trig"})
# Our judgment reasons (the name of the card or skill judging).
JUDGE_REASONS = {"#eight_diagram_skill": "eight_diagram", "tieqi": "tieji"}
# Which draws are which (MoveCards skillName for cards drawn from the pile into a hand).
DRAW_REASONS = {"phase_draw": pb.DRAW_REASON_DRAW_PHASE, "recast": pb.DRAW_REASON_RECAST,
                "game_rule": pb.DRAW_REASON_KILL_REWARD, "kill": pb.DRAW_REASON_KILL_REWARD,
                "ex_nihilo_skill": pb.DRAW_REASON_CARD_EFFECT, "#double_swords_skill": pb.DRAW_REASON_CARD_EFFECT}
# Choices a MoveCards line shows: skillName -> who chose (the mover "proposer", or the one the cards left).
CHOICES_BY_PROPOSER = frozenset({"phase_discard", "dismantlement_skill", "snatch_skill", "amazing_grace_skill",
                                 "#ice_sword_skill", "fire_attack_skill", "fanjian"})
CHOICES_BY_OWNER = frozenset({"#double_swords_skill", "ganglie"})
# Skills whose invocation names the cards they move (costs paid, cards taken or given).
SKILL_CARDS = frozenset({"zhiheng", "jieyin", "qingnang", "liuli", "lijian", "axe", "kylin_bow", "tuxi", "fankui",
                         "rende", "guicai"})


# The events that are decisions (each has a seat: its maker).
DECISIONS = frozenset({"use_card", "respond", "decline", "choose_cards", "invoke_skill", "end_play_phase",
                       "pick_general", "choose_suit", "reveal_general", "choose_option"})
# A reply's maker (Message.by) -> the decision's source. A reply whose maker the record does not say
# (a client replay holds none) gives none.
DECISION_SOURCES = {BY_CLIENT: pb.DECISION_SOURCE_CLIENT, BY_AI: pb.DECISION_SOURCE_AI,
                    BY_NONE: pb.DECISION_SOURCE_DEFAULT}
# Requests whose declined answer ("__cancel") is a "no" that makes nothing (declines are implicit in our log), so
# a newer answer of the same player replaces it. A declined answer to any other request is FreeKill's default
# (the end of a play phase, a card it picks, a suit it names for 反间), a decision that may be recorded after the
# player's next answer (反间's suit after the card).
DECLINABLE = frozenset({"AskForSkillInvoke", "AskForUseCard", "AskForResponseCard", "AskForUseActiveSkill"})
# Requests that ask for no choice (FreeKill's pause while an animation plays): their answer is never a decision.
NOT_ASKING = frozenset({"EmptyRequest"})


def says_no(reply: Message) -> bool:
    """Is ``reply`` a "no" to a DECLINABLE request: declined, or a selection of nothing (FreeKill's AI from v0.5.22
    answers 流离 it does not use with no card and no target, ``{"card": {"skill": ..., "subcards": []}}``)?"""
    if reply.cmd not in DECLINABLE:
        return False
    answer = reply.data
    if answer == "__cancel":
        return True
    if not isinstance(answer, dict) or set(answer) - {"card", "targets"} or answer.get("targets"):
        return False
    card = answer.get("card")
    return card is None or (isinstance(card, dict) and not set(card) - {"skill", "subcards"}
                            and not card.get("subcards"))


class ImportFailure(ValueError):
    """The record cannot be turned into a log (with what and where)."""


# The longest reason a conversion failure gives (it may quote the record).
MAX_REASON = 300


@dataclass(slots=True)
class Conversion:
    """A converted game: the log, and for each of its events the record position it came from."""

    log: pb.GameLog
    sources: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # For each reply that became a decision: the reply's record position -> the event (the first it became).
    reply_events: dict[int, int] = field(default_factory=dict)


def skill_name(fk: str) -> str:
    """Ours for a FreeKill skill name: '#eight_diagram_skill' / '##eight_diagram_skill_2_trig' -> eight_diagram."""
    name = fk.lstrip("#")
    if name.endswith("_2_trig"):
        name = name[: -len("_2_trig")]
    if name.endswith("_skill") and name != "spear_skill&":
        name = name[: -len("_skill")]
    return SKILL_NAMES.get(name, name)


@dataclass(slots=True)
class _Trick:
    """A trick resolving, target by target (for whom a 无懈可击 is played)."""

    card: int  # FreeKill id of its (first) real card
    targets: list[int]  # our seats, in the order their effects resolve
    delayed: bool = False  # a delayed trick judged in its owner's judgment phase
    seen: int = -1  # the last target position whose effect has come
    window: int | None = None  # the target position of the open 无懈可击 window
    chain: int = 0  # 无懈可击 played in that window


@dataclass(slots=True)
class _Yiji:
    seat: int  # whose 遗计 is giving its two cards
    drawn: bool = False  # its two cards drawn (later than the invocation when the pile was short: a reshuffle)


class Converter:
    """Walks the messages once; ``convert`` drives it."""

    def __init__(self, messages: list[Message], players: int, table: CardTable) -> None:
        self.messages = messages
        self.n = players
        self.table = table
        self.events: list[pb.Event] = []
        self.sources: list[int] = []
        self.reply_events: dict[int, int] = {}  # (Conversion.reply_events)
        self.notes: list[str] = []
        self.seq = 0  # the message being read
        self.seat_of: dict[int, int] = {}
        self.fk_player: list[int] = []
        self.roles: dict[int, str] = {}
        self.generals: dict[int, str] = {}
        self.draw_pile: list[int] = []  # FreeKill ids, top first
        self.hands: dict[int, list[int]] = {}
        self.judgment: dict[int, list[int]] = {}
        self.requests: dict[int, Message] = {}  # each player's latest request (cross_check only)
        self.replies: dict[tuple[int, str], Message] = {}  # each player's latest reply, per request kind
        # The card 激将/护驾 just obtained for the lord (seat, its real cards): FreeKill then shows the lord
        # using or playing it, which in our log is the invocation and the other character's answer.
        self.supplied: tuple[int, tuple[int, ...]] | None = None
        self.supplied_use: Any = None  # the lord who just used a 杀 激将 obtained (朱雀羽扇 may follow)
        self.current: int | None = None
        self.phase = 0
        self.turns = 0
        self.dead: set[int] = set()
        self.over = False
        self.invoke: tuple[pb.InvokeSkill, str] | None = None  # the last invocation
        self.open_invokes: dict[str, pb.InvokeSkill] = {}  # each skill's last invocation, collecting its cards
        self.timed_out = False  # FreeKill ended the game by its time-out rule
        self.last_use: pb.UseCard | None = None  # the last card used (借刀杀人's second target)
        self.last_card: pb.CardRef | None = None  # the last card used or played (朱雀羽扇 turns it into a 火杀)
        self.damage: dict[int, pb.Damage] = {}  # damage waiting for the victim's HP (shown after it)
        self.hp: dict[int, int] = {}  # HP as last shown (shown before a loss or a recovery is logged)
        self.chained: set[int] = set()  # victims of the next passed-on damage
        self.judge_reason: dict[int, str] = {}
        self.reshuffle: list[int] | None = None  # a recorded reshuffle our engine does later (kept cards first)
        self.kept = 0  # cards left on top when FreeKill reshuffled, still to be drawn before ours
        self.yiji: _Yiji | None = None
        self.guanxing: int | None = None  # the seat whose 观星 waits for the pile's new order
        self.suits_inferred = 0
        # An inferred suit the damage right after may correct: (target, the choice, the events after it).
        self.fanjian_pending: tuple[Any, pb.ChooseSuit, int] | None = None
        self.trick: _Trick | None = None
        self.nullifications: set[int] = set()  # 无懈可击 cards played against the resolving trick
        self.dying: list[int] = []  # FreeKill ids of the characters dying now (the last one is being saved)
        self.blade: int | None = None  # who may use 青龙偃月刀's second 杀 now
        self.fk_of_card = {ours: fk for fk, ours in table.to_ours.items()}
        self.equips: dict[int, list[int]] = {}  # FreeKill player -> FreeKill ids in the equipment area
        self.max_hp: dict[int, int] = {}
        # (seq, inferred, prompted): 无懈可击 targets, inferred and as the request named them (transcripts).
        self.prompted: list[tuple[int, int | None, int]] = []
        # Each player's answers (record position, who made it, a "no" to a DECLINABLE request) that no decision
        # has taken yet.
        self.answers: dict[int, list[tuple[int, pb.DecisionSource, bool]]] = {}

    # ---------------------------------------------------------------- helpers

    def fail(self, why: str) -> ImportFailure:
        # (``why`` may quote a value of the record, which can be as long as the record: the message is bounded)
        if len(why) > MAX_REASON:
            why = why[:MAX_REASON] + f"… ({len(why) - MAX_REASON} more characters)"
        return ImportFailure(f"record position {self.seq}: {why}")

    def seat(self, fk_player: Any) -> int:
        if not isinstance(fk_player, int) or fk_player not in self.seat_of:
            raise self.fail(f"{fk_player!r} is not a player at this table")
        return self.seat_of[fk_player]

    def card(self, fk_id: Any) -> int:
        if not isinstance(fk_id, int) or isinstance(fk_id, bool):
            raise self.fail(f"{fk_id!r} is not a card id")
        try:
            return self.table.ours(fk_id)
        except CardTableError as err:
            raise self.fail(str(err)) from None

    def actor(self, data: dict[str, Any]) -> int:
        """The player a GameLog line is about (its ``from``)."""
        who = data.get("from")
        if not isinstance(who, int) or who not in self.seat_of:
            raise self.fail(f"a {data.get('type')} line names no player of this table: {who!r}")
        return who

    def emit(self, ev: pb.Event) -> pb.Event:
        kind = ev.WhichOneof("kind")
        if kind in DECISIONS and self.answers:
            # A decision is its maker's answer to a request: the oldest answer they gave since the game last
            # moved on (反间's target answers the suit, then the card: the two decisions, in that order).
            # One decision per answer; a decision the record shows with no answer (FreeKill gave the last
            # card of 五谷丰登 without asking; a client replay holds no replies) keeps no source.
            answers = self.answers.get(self.fk_player[getattr(ev, kind).seat])
            if answers:
                reply, ev.source, _ = answers.pop(0)
                self.reply_events.setdefault(reply, len(self.events))
        self.events.append(ev)
        self.sources.append(self.seq)
        return ev

    def card_ref(self, card: Any) -> pb.CardRef:
        """A GameLog card: a real id, or a virtual card map {"2": name, "6": subcards, "7": skills}."""
        if isinstance(card, list) and len(card) == 1:
            card = card[0]
        if isinstance(card, int) and not isinstance(card, bool):
            return pb.CardRef(id=self.card(card))
        if isinstance(card, dict):
            name = card.get("2")
            if not isinstance(name, str):
                raise self.fail(f"a virtual card without a name: {card!r}")
            skills = card.get("7") or []
            skill = skill_name(skills[0]) if skills else ""
            subcards = [self.card(c) for c in card.get("6") or []]
            return pb.CardRef(virtual=pb.VirtualCard(name=NAMES.get(name, name), subcards=subcards, skill=skill))
        raise self.fail(f"cannot read the card {card!r}")

    # ---------------------------------------------------------------- set-up

    def read_setup(self) -> int:
        """Seats, roles, generals, the initial draw pile and the starting hands; returns where the game
        proper starts (the first round)."""
        prepared: list[int] = []
        synced: list[int] | None = None
        dealt: dict[int, list[int]] = {}
        for i, msg in enumerate(self.messages):
            self.seq = msg.seq
            if msg.kind != NOTIFY:
                continue
            cmd, data = msg.cmd, msg.data
            if cmd == "ArrangeSeats":
                if not isinstance(data, list) or len(data) != self.n or len(set(data)) != self.n:
                    raise self.fail(f"ArrangeSeats must list the {self.n} players once each: {data!r}")
                self.seat_of = {fk: s for s, fk in enumerate(data)}
                self.fk_player = list(data)  # our seat -> FreeKill player
            elif cmd == "PropertyUpdate" and isinstance(data, list) and len(data) == 3:
                who, prop, value = data
                if prop == "role" and isinstance(value, str):
                    self.roles[who] = value
                elif prop == "general" and isinstance(value, str) and value:
                    self.generals[who] = value
                elif prop == "hp" and isinstance(value, int):
                    self.hp[who] = value
                elif prop == "maxHp" and isinstance(value, int):
                    self.max_hp[who] = value
            elif cmd == "SetBanner" and isinstance(data, list) and data and data[0] == "InitialGeneral":
                for entry in data[1]:
                    self.generals[entry[0]] = entry[1]
            elif cmd == "PrepareDrawPile":
                prepared = list(data)
            elif cmd == "SyncDrawPile":
                synced = list(data)
            elif cmd == "MoveCards":
                for move in self.moves(data):
                    if move.get("toArea") == HAND and move.get("moveReason") == R_DRAW:
                        dealt.setdefault(move["to"], []).extend(info["cardId"] for info in move["moveInfo"])
            elif cmd == "GameLog" and isinstance(data, dict) and data.get("type") in ("$RoundStart", "$TurnStart"):
                self.draw_pile = synced if synced is not None else [c for c in prepared
                                                                     if not any(c in h for h in dealt.values())]
                self.hands = {fk: list(cards) for fk, cards in dealt.items()}
                return i
        raise ImportFailure("the record ends before the game's first round: nothing to verify")

    def header(self) -> pb.GameHeader:
        if not self.seat_of:
            raise ImportFailure("the record has no seating (ArrangeSeats)")
        h = pb.GameHeader(ruleset="identity/1", mode=pb.MODE_IDENTITY, seed=0)
        o = h.options
        o.packages.extend(p for p in self.table.packages if p != "standard")
        o.generals = pb.GENERALS_MODE_STANDARD
        o.outcomes = pb.OUTCOME_RECORDING_PARTIAL
        o.recorded_reshuffles = True
        # FreeKill's server carries out whatever a client replies: its record is the game that was played.
        o.server_record = True
        counts = [0, 0, 0, 0]
        for fk in self.fk_player:
            role = ROLES.get(self.roles.get(fk, ""))
            if role is None:
                raise ImportFailure(f"player {fk} has no identity-mode role ({self.roles.get(fk)!r})")
            general = self.generals.get(fk)
            if not general:
                raise ImportFailure(f"player {fk} has no general")
            counts[role - 1] += 1
            h.seats.add(player=f"freekill:{fk}", role=role, general=general)
        # FreeKill's role table, declared as dealt (the same for every input format, so the digests are too):
        # a table that is one of the rule book's is no house rule; FreeKill's 10 players (1-3-5-1) are.
        t = o.role_table
        t.lords, t.loyalists, t.rebels, t.spies = counts
        setup = h.setup
        for fk, s in sorted(self.seat_of.items(), key=lambda kv: kv[1]):
            cards = self.hands.get(fk, [])
            if len(cards) != 4:
                raise ImportFailure(f"player {fk} was dealt {len(cards)} starting cards, not 4")
            setup.starting_hands.add(seat=s, cards=[self.card(c) for c in cards])
        setup.draw_pile.extend(self.card(c) for c in self.draw_pile)
        return h

    # ---------------------------------------------------------------- the game

    @staticmethod
    def moves(data: Any) -> list[dict[str, Any]]:
        if isinstance(data, list) and data and isinstance(data[0], list):
            return [m for m in data[0] if isinstance(m, dict)]
        return []

    def run(self, start: int) -> None:
        for msg in self.messages[start:]:
            self.step(msg)
        self.close()

    def step(self, msg: Message) -> None:
        """Read the game's next message (after the set-up)."""
        self.seq = msg.seq
        if msg.kind == REQUEST:
            if msg.to:
                self.requests[msg.to[0]] = msg
                if msg.cmd == "PlayCard":
                    # The player is asked for their next play: every answer of theirs before it has been taken or
                    # led to nothing. Kept, an answer that led to nothing with no event after it (遗计's cards
                    # kept: the AI declined to give them) would be taken as the source of the play this request
                    # asks for — a client's second 杀 said to be the AI's (a real game, tests/test_freekill_stream).
                    self.answers.pop(msg.to[0], None)
            return
        if msg.kind == REPLY:
            if msg.to:
                self.replies[(msg.to[0], msg.cmd)] = msg
                source = DECISION_SOURCES.get(msg.by)
                if source is not None and msg.cmd not in NOT_ASKING:
                    pending = self.answers.setdefault(msg.to[0], [])
                    # The player answers again: a "no" of theirs that no decision took led to nothing. Kept, it
                    # would be taken as the source of this answer's decision: a client's cheat said to be the AI's
                    # (八卦阵 and a 护驾 闪 declined by the AI, then the client's answer: a CI run of the live tests).
                    pending[:] = [a for a in pending if not a[2]]
                    pending.append((msg.seq, source, says_no(msg)))
                if self.discards_nothing(msg):
                    # FreeKill discards what the reply names, here nothing, so no move shows the decision: the
                    # reply itself is the discard phase's answer (the rules then judge the count: HAND_LIMIT).
                    self.emit(pb.Event(choose_cards=pb.ChooseCards(seat=self.seat(msg.to[0]))))
            return
        handler = getattr(self, "on_" + msg.cmd, None)
        if handler is not None:
            made = len(self.events)
            handler(msg.data)
            if len(self.events) > made and self.answers:
                # The game has moved on: an answer no decision took here led to none (a decline).
                for answers in self.answers.values():
                    answers[:] = [a for a in answers if a[0] > msg.seq]

    def discards_nothing(self, reply: Message) -> bool:
        """Is ``reply`` an answer to the discard phase's request that names no card? (A modified client's: FreeKill
        asks only when cards are due, and its AI and its default on a timeout give them.)"""
        # (the request is known by the phase: its own data is not kept, api.READ_REQUESTS)
        if reply.cmd != "AskForUseActiveSkill" or reply.to[0] != self.current or self.phase != FK_DISCARD \
                or reply.to[0] not in self.seat_of:
            return False
        answer = reply.data
        card = answer.get("card") if isinstance(answer, dict) else None
        return isinstance(card, dict) and card.get("skill") == "discard_skill" and not card.get("subcards")

    def close(self) -> None:
        """The record has ended."""
        if self.suits_inferred:
            self.notes.append(f"the suit named for 反间 was inferred from its outcome {self.suits_inferred} time(s) "
                              "(the record holds no reply)")

    # --- notifications

    def on_GameLog(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        handler = getattr(self, "log_" + str(data.get("type", "")).lstrip("#$"), None)
        if handler is not None:
            handler(data)

    def on_PropertyUpdate(self, data: Any) -> None:
        if not isinstance(data, list) or len(data) < 3:
            return
        who, prop, value = data[0], data[1], data[2]
        if prop == "phase" and who == self.current and isinstance(value, int):
            self.phase_change(value)
        elif prop == "maxHp" and isinstance(value, int):
            self.max_hp[who] = value
        elif prop == "hp" and isinstance(value, int):
            self.hp[who] = value
            dmg = self.damage.pop(self.seat(who), None) if who in self.seat_of else None
            if dmg is not None:
                dmg.hp_after = value

    def on_ShuffleDrawPile(self, data: Any) -> None:
        order = list(data)
        kept = len(self.draw_pile)
        if order[:kept] != self.draw_pile:
            raise self.fail("a reshuffle did not keep the cards left in the draw pile on top")
        self.draw_pile = order
        # FreeKill reshuffles as soon as the pile is short; we reshuffle when the next card is needed
        # and the pile is empty: the same draws. The reshuffle is recorded when our engine makes it.
        self.reshuffle = [self.card(c) for c in order[kept:]]
        self.kept = kept
        if self.yiji is not None and not self.yiji.drawn:
            self.yiji_draw()  # (the pile was short when 遗计 was invoked: FreeKill reshuffled to draw its cards)

    def on_SyncDrawPile(self, data: Any) -> None:
        self.draw_pile = list(data)

    def log_TimeOutDraw(self, data: dict[str, Any]) -> None:
        self.timed_out = True

    def on_GameOver(self, data: Any) -> None:
        if self.timed_out:
            # A room rule of FreeKill's (a game that goes on too long is called a draw), not a rule of the
            # game: the record ends here, unfinished.
            self.notes.append(f"FreeKill ended the game as a draw by its time-out rule after {self.turns} turns "
                              "(no rule of the game does): the log ends there")
            self.over = True
            return
        roles = self.winning_roles(data)
        ev = pb.Event()
        go = ev.game_over
        if "lord" in roles:
            go.side = pb.SIDE_LORD
            go.winners.extend(sorted(s for fk, s in self.seat_of.items() if self.roles[fk] in ("lord", "loyalist")))
        elif "rebel" in roles:
            go.side = pb.SIDE_REBELS
            go.winners.extend(sorted(s for fk, s in self.seat_of.items() if self.roles[fk] == "rebel"))
        elif "renegade" in roles:
            go.side = pb.SIDE_SPY
            go.winners.extend(sorted(s for fk, s in self.seat_of.items()
                                     if self.roles[fk] == "renegade" and fk not in self.dead))
        else:
            go.side = pb.SIDE_NONE
        self.emit(ev)
        self.over = True

    def winning_roles(self, data: Any) -> set[str]:
        """The roles GameOver names as winning. FreeKill up to v0.5.21 sends the roles (``lord+loyalist``); from
        v0.5.22 the winners' player ids (``4+2``, one winner ``2``, or the number itself where a reader decoded the
        string), whose roles the record gave: what the payload holds tells which, no version is needed."""
        parts = [p for p in str(data if data is not None else "").split("+") if p]
        if parts and all(p.lstrip("-").isdigit() for p in parts):
            return {self.roles.get(int(p), "") for p in parts}
        return set(parts)

    def on_ShowCard(self, data: Any) -> None:
        pass  # 火攻's shown card comes as the '#ShowCard' GameLog line

    def on_MoveCards(self, data: Any) -> None:
        moves = self.moves(data)
        if self.guanxing is not None and self.guanxing_moves(moves):
            return
        for move in moves:
            self.one_move(move)

    def guanxing_moves(self, moves: list[dict[str, Any]]) -> bool:
        """观星 as FreeKill shows it from v0.5.22 (no '#GuanxingResult' line, no synced pile): the cards looked at
        move from the top of the draw pile to the processing area, and after his answer back onto the pile in one
        MoveCards: those for the top in reverse (FreeKill puts them on one by one, the last on top), those for the
        bottom in order (``drawPilePosition`` -1). True when ``moves`` are those moves (taken here)."""
        if not moves or any(m.get("skillName") != "guanxing" for m in moves):
            return False
        infos = [[i for i in m.get("moveInfo", []) if isinstance(i, dict)] for m in moves]
        if all(m.get("toArea") == PROCESSING for m in moves) \
                and all(i.get("fromArea") == DRAW_PILE for part in infos for i in part):
            looked = [i["cardId"] for part in infos for i in part]
            self.take_from_pile(len(looked))  # (a reshuffle first, if FreeKill made one early)
            for cid in looked:
                self.leave(cid, DRAW_PILE, None)
            return True
        if all(m.get("toArea") == DRAW_PILE for m in moves) \
                and all(i.get("fromArea") == PROCESSING for part in infos for i in part):
            top: list[int] = []
            bottom: list[int] = []
            for move, part in zip(moves, infos, strict=True):
                ids = [i["cardId"] for i in part]
                if move.get("drawPilePosition") == -1:
                    bottom.extend(ids)
                else:
                    top[:0] = reversed(ids)
            self.draw_pile = [*top, *self.draw_pile, *bottom]
            seat = self.guanxing
            self.guanxing = None
            assert seat is not None
            self.emit(pb.Event(choose_cards=pb.ChooseCards(seat=seat, cards=[self.card(c) for c in top],
                                                           bottom=[self.card(c) for c in bottom])))
            return True
        return False

    # --- moves

    def one_move(self, move: dict[str, Any]) -> None:
        infos = [i for i in move.get("moveInfo", []) if isinstance(i, dict)]
        ids = [i["cardId"] for i in infos]
        for info in infos:
            before = info.get("beforeCard")
            if isinstance(before, dict) and "2" in before:
                try:
                    self.table.check_fact(info["cardId"], before["2"], before.get("3", 0), before.get("4", 0))
                except CardTableError as err:
                    raise self.fail(str(err)) from None
        to_area, reason, skill = move.get("toArea"), move.get("moveReason"), move.get("skillName") or ""
        to, frm, proposer = move.get("to"), move.get("from"), move.get("proposer")
        if reason in (R_USE, R_RESPONSE) and to_area == PROCESSING:
            # The card of a use or response that was not its user's (a modified client's reply FreeKill carried
            # out): taken from another's hand or equipment, or from the draw pile (not 五谷丰登's reveal).
            self.taken(infos, frm)
            infos = [i for i in infos if i.get("fromArea") != DRAW_PILE]
        from_pile = [i["cardId"] for i in infos if i.get("fromArea") == DRAW_PILE]
        for info in infos:
            self.leave(info["cardId"], info.get("fromArea"), frm)
        # Cards coming off the draw pile: draws, reveals, 遗计's cards.
        if from_pile:
            self.off_the_pile(from_pile, move)
        for cid in ids:
            self.enter(cid, to_area, to)
        if skill == "phase_judge" and frm in self.seat_of and infos and infos[0].get("fromArea") == JUDGE:
            # A delayed trick leaves the judgment area to be judged: 无懈可击 now are against it.
            self.trick = _Trick(ids[0], [self.seat(frm)], delayed=True)
            self.nullifications = set()
        if reason == R_RECAST and to_area == DISCARD_PILE:
            self.decision_use(frm, ids, [], recast=True)
            return
        inv = self.open_invokes.get(skill_name(skill))
        if inv is not None and skill_name(skill) in SKILL_CARDS and not from_pile:
            # (Cards the effect moves on from the processing area — 鬼才's replaced judgment — are no cost.)
            inv.cards.extend(self.card(i["cardId"]) for i in infos if i.get("fromArea") != PROCESSING)
            if skill_name(skill) == "rende" and not inv.targets and to in self.seat_of:
                inv.targets.append(self.seat(to))
            return
        if skill == "yiji" and reason == R_GIVE and self.yiji is not None:
            self.yiji_give(ids, to)
            return
        if skill in CHOICES_BY_PROPOSER or skill in CHOICES_BY_OWNER:
            chooser = frm if skill in CHOICES_BY_OWNER else (proposer if proposer is not None else to)
            if skill == "fanjian":
                chooser = to
                self.fanjian_suit(to, ids)
            if chooser in self.seat_of:
                self.effect_on(self.seat(chooser))
                self.emit(pb.Event(choose_cards=pb.ChooseCards(seat=self.seat(chooser), cards=[self.card(c)
                                                                                              for c in ids])))

    def taken(self, infos: list[dict[str, Any]], frm: Any) -> None:
        """The used or played cards that came from where the last decision's maker did not hold them, each as a
        CardsMoved (MOVE_REASON_TAKEN) into the maker's hand, right after the decision
        (docs/log-format.md#taken-cards)."""
        last = self.events[-1] if self.events else None
        kind = last.WhichOneof("kind") if last is not None else None
        if last is None or kind not in ("use_card", "respond"):
            return
        user = getattr(last, kind).seat
        for info in infos:
            area, cid = info.get("fromArea"), info["cardId"]
            move = pb.CardsMoved(cards=[self.card(cid)], to_seat=user, to_zone=pb.ZONE_HAND,
                                 reason=pb.MOVE_REASON_TAKEN)
            if area == DRAW_PILE:
                self.leave(cid, area, frm)
                self.take_from_pile(1)
                move.from_zone = pb.ZONE_DRAW_PILE
            elif area in (HAND, EQUIP) and frm in self.seat_of and self.seat(frm) != user:
                move.from_seat = self.seat(frm)
                move.from_zone = pb.ZONE_HAND if area == HAND else pb.ZONE_EQUIPMENT
            else:
                continue
            self.emit(pb.Event(cards_moved=move))

    def leave(self, cid: int, area: Any, owner: Any) -> None:
        if area == DRAW_PILE:
            if cid in self.draw_pile:
                self.draw_pile.remove(cid)
        elif area == HAND and owner in self.hands:
            if cid in self.hands[owner]:
                self.hands[owner].remove(cid)
        elif area == JUDGE:
            for cards in self.judgment.values():
                if cid in cards:
                    cards.remove(cid)
        elif area == EQUIP:
            for cards in self.equips.values():
                if cid in cards:
                    cards.remove(cid)

    def enter(self, cid: int, area: Any, owner: Any) -> None:
        if area == HAND and owner is not None:
            self.hands.setdefault(owner, []).append(cid)
        elif area == JUDGE and owner is not None:
            self.judgment.setdefault(owner, []).append(cid)
        elif area == EQUIP and owner is not None:
            self.equips.setdefault(owner, []).append(cid)
        elif area == DRAW_PILE:
            self.draw_pile.insert(0, cid)

    def take_from_pile(self, count: int) -> None:
        """Cards leave the top of the pile: record a reshuffle FreeKill made early where ours happens."""
        if self.reshuffle is None:
            return
        if count > self.kept:
            self.emit(pb.Event(reshuffle=pb.Reshuffle(order=self.reshuffle)))
            self.reshuffle = None
            self.kept = 0
        else:
            self.kept -= count

    def off_the_pile(self, fk_ids: list[int], move: dict[str, Any]) -> None:
        to_area, reason, skill, to = move.get("toArea"), move.get("moveReason"), move.get("skillName") or "", \
            move.get("to")
        if reason == R_JUDGE:
            return  # the judgment outcome is written at '#InitialJudge'
        if skill == "yiji" and self.yiji is not None:
            return  # 遗计's two cards were drawn when it was invoked
        if to_area == PROCESSING:  # (judgments are handled above): 五谷丰登's reveal
            self.take_from_pile(len(fk_ids))
            self.emit(pb.Event(reveal=pb.Reveal(cards=[self.card(c) for c in fk_ids], reason="amazing_grace")))
            return
        if to_area == HAND and to in self.seat_of:
            why = DRAW_REASONS.get(skill, pb.DRAW_REASON_SKILL if skill else pb.DRAW_REASON_CARD_EFFECT)
            self.take_from_pile(len(fk_ids))
            self.emit(pb.Event(draw_cards=pb.DrawCards(seat=self.seat(to), cards=[self.card(c) for c in fk_ids],
                                                       reason=why)))

    # --- phases and turns

    def phase_change(self, fk_phase: int) -> None:
        if self.phase == FK_PLAY and fk_phase != FK_PLAY:
            self.close_play_phase()
        self.phase = fk_phase
        ours = PHASES.get(fk_phase)
        if ours is None or self.current is None:
            return
        seat = self.seat(self.current)
        if ours == pb.PHASE_JUDGMENT and not self.judgment.get(self.current):
            return  # our engine has a judgment phase only when the area holds cards
        self.emit(pb.Event(phase_start=pb.PhaseStart(seat=seat, phase=ours)))

    def close_play_phase(self) -> None:
        """The current player's play phase ends (they did not die in it)."""
        if self.phase == FK_PLAY and self.current is not None and self.current not in self.dead:
            self.emit(pb.Event(end_play_phase=pb.EndPlayPhase(seat=self.seat(self.current))))
        if self.phase == FK_PLAY:
            self.phase = 0

    def log_TurnStart(self, data: dict[str, Any]) -> None:
        who = self.actor(data)
        self.close_play_phase()
        self.current = who
        self.phase = 0
        self.turns += 1
        self.emit(pb.Event(turn_start=pb.TurnStart(seat=self.seat(who), turn=self.turns)))

    # --- cards used and played

    def decision_use(self, who: Any, fk_cards: Any, to: list[Any], recast: bool = False) -> None:
        seat = self.seat(who)
        ref = self.card_ref(fk_cards)
        use = pb.UseCard(seat=seat, card=ref, recast=recast)
        if not recast:
            use.targets.extend(self.seat(t) for t in to)
        self.last_use = self.emit(pb.Event(use_card=use)).use_card
        self.last_card = self.last_use.card
        name = self.card_name(ref)
        if name in TRICKS and not recast:
            targets = [self.seat(t) for t in to] or [seat]
            if name == "collateral":
                targets = targets[:1]  # the weapon holder (the other is whom they must attack)
            else:  # each target in seat order from the user (FreeKill lists them in another order)
                targets.sort(key=lambda t: (t - seat) % self.n)
            # No window opens for a target the card cannot affect: 藤甲 voids 南蛮入侵 and 万箭齐发, and
            # 桃园结义 passes over characters at full HP.
            if name in ("savage_assault", "archery_attack"):
                targets = [t for t in targets if not self.wears(t, "vine")]
            elif name == "god_salvation":
                targets = [t for t in targets if self.wounded(t)]
            fk_cards = physical(fk_cards)
            self.trick = _Trick(fk_cards[0] if fk_cards else 0, targets)
            self.nullifications = set()

    @staticmethod
    def card_name(ref: pb.CardRef) -> str:
        return ref.virtual.name if ref.WhichOneof("kind") == "virtual" else all_cards()[ref.id].name

    def log_UseCardToTargets(self, data: dict[str, Any]) -> None:
        who, card, to = self.actor(data), data.get("card"), list(data.get("to") or [])
        if self.made_by_skill(card):
            return  # 离间's 决斗: the skill's invocation is the decision
        if self.was_supplied(who, card):
            self.supplied_use = who  # the 杀 激将 obtained, used by the lord: the invocation named its target
            return
        name = self.card_name(self.card_ref(card))
        if self.dying and name in ("peach", "analeptic"):
            self.respond(who, card)  # a rescue (FreeKill "uses" it on the dying character)
        elif self.blade is not None and self.blade == who:
            self.blade = None
            self.respond(who, card)  # 青龙偃月刀's second 杀 answers the weapon's offer
        elif who == self.current and self.phase == FK_PLAY:
            self.decision_use(who, card, to)
        else:
            self.respond(who, card)  # e.g. 借刀杀人's 杀

    def log_UseCard(self, data: dict[str, Any]) -> None:
        # A use with no target at all: FreeKill fills none when the card has no valid one (a 桃 at full
        # HP, which only a modified client sends: its server carries it out all the same).
        self.log_UseCardToTargets(data)

    def was_supplied(self, who: Any, card: Any) -> bool:
        supplied, self.supplied = self.supplied, None
        return supplied is not None and supplied == (self.seat(who), physical(card))

    @staticmethod
    def made_by_skill(card: Any) -> bool:
        if isinstance(card, list) and len(card) == 1:
            card = card[0]
        return isinstance(card, dict) and any(skill_name(s) in MADE_BY_SKILLS for s in card.get("7") or [])

    def log_CardUseCollaborator(self, data: dict[str, Any]) -> None:
        # 借刀杀人: the weapon holder's victim, the card's second target.
        if self.last_use is not None:
            self.last_use.targets.extend(self.seat(t) for t in data.get("to") or [])

    def log_UseCardToCard(self, data: dict[str, Any]) -> None:
        # ``arg``: the card answered (the 杀 a 闪 cancels, the trick or 无懈可击 a 无懈可击 nullifies).
        self.respond(self.actor(data), data.get("card"), answered=data.get("arg"))

    def log_ResponsePlayCard(self, data: dict[str, Any]) -> None:
        self.respond(self.actor(data), data.get("card"))

    def respond(self, who: Any, card: Any, answered: Any = None) -> None:
        seat = self.seat(who)
        ref = self.card_ref(card)
        name = self.card_name(ref)
        if name != "nullification":
            self.effect_on(seat)  # answering 南蛮入侵 / 万箭齐发 is that target's turn of the trick
        if self.was_supplied(who, card):
            return  # the card 激将/护驾 obtained from another character: their answer is in the log
        if ref.WhichOneof("kind") == "virtual" and ref.virtual.skill in PROVIDED:
            return  # a card an effect provided: its invocation (and judgment, or another's answer) is in the log
        r = pb.Respond(seat=seat, card=ref)
        if self.invoke is not None and self.invoke[1] in ("jijiang", "hujia") and self.invoke[0].seat != seat \
                and physical(card):
            self.supplied = (self.invoke[0].seat, physical(card))
        if name in ("peach", "analeptic") and self.dying:
            r.target = self.seat(self.dying[-1])
        elif name == "nullification":
            self.nullify_target(r, answered)
            self.cross_check(who, r)
        self.last_card = self.emit(pb.Event(respond=r)).respond.card

    def nullify_target(self, r: pb.Respond, answered: Any) -> None:
        """Whose effect a 无懈可击 cancels, from the trick's resolution so far (the same in a transcript and
        in a client replay, which holds other players' requests neither): a 无懈可击 answering another
        continues that window's chain; one answering the trick opens the window of the next target whose
        effect has not come yet."""
        trick = self.trick
        if trick is None or not trick.targets:
            return
        if trick.window is not None and physical(answered) and physical(answered)[0] in self.nullifications:
            trick.chain += 1
        else:
            if trick.window is not None and trick.chain % 2 == 1:
                trick.seen = max(trick.seen, trick.window)  # the last window's target was nullified
            trick.window = min(trick.seen + 1, len(trick.targets) - 1)
            trick.chain = 1
        r.target = trick.targets[trick.window]
        if trick.delayed:
            r.trick_card = self.card(trick.card)
        self.nullifications.update(self.physical_of(r.card))

    def cross_check(self, who: Any, r: pb.Respond) -> None:
        """Where the record holds the request the 无懈可击 answered (a transcript), it names the target
        too: keep both, so tests can hold the inference to it."""
        req = self.requests.get(who)
        if req is None or req.cmd != "AskForUseCard" or not isinstance(req.data, list) or len(req.data) < 3:
            return
        prompt = req.data[2]
        parts = prompt.split(":") if isinstance(prompt, str) else []
        if prompt.startswith("#AskForNullification:") and len(parts) >= 3 and parts[2].isdigit() \
                and int(parts[2]) in self.seat_of:
            self.prompted.append((self.seq, r.target if r.HasField("target") else None, self.seat(int(parts[2]))))

    def physical_of(self, ref: pb.CardRef) -> list[int]:
        """FreeKill ids of the real cards of one of our card references."""
        ours = [ref.id] if ref.WhichOneof("kind") == "id" else list(ref.virtual.subcards)
        return [self.fk_of_card[c] for c in ours]

    def wounded(self, seat: int) -> bool:
        fk = self.fk_player[seat]
        return self.hp.get(fk, 0) < self.max_hp.get(fk, 0)

    def wears(self, seat: int, name: str) -> bool:
        return any(self.table.cards[c].name == name for c in self.equips.get(self.fk_player[seat], []))

    def effect_on(self, seat: int) -> None:
        """Something happened to ``seat`` as a target of the trick resolving: its turn of the trick came."""
        trick = self.trick
        if trick is not None and seat in trick.targets:
            pos = trick.targets.index(seat)
            if pos >= trick.seen:
                trick.seen = pos
                if trick.window is not None and trick.window <= pos:
                    trick.window = None

    # --- skills

    def log_InvokeSkill(self, data: dict[str, Any]) -> None:
        self.invoked(self.actor(data), str(data.get("arg", "")), [])

    def log_InvokeSkillTo(self, data: dict[str, Any]) -> None:
        self.invoked(self.actor(data), str(data.get("arg", "")), list(data.get("to") or []))

    def invoked(self, who: Any, fk_skill: str, to: list[Any]) -> None:
        if fk_skill in EFFECT_LINES:
            return
        name = skill_name(fk_skill)
        if name == "blade":
            self.blade = who
        if name in NOT_DECISIONS:
            return
        if name == "fan":
            self.fan(who)
            return
        seat = self.seat(who)
        inv = self.emit(pb.Event(invoke_skill=pb.InvokeSkill(seat=seat, skill=name,
                                                             targets=[self.seat(t) for t in to]))).invoke_skill
        self.invoke = (inv, name)
        # Its cards come in the moves that follow, maybe after another skill's (突袭 taking 陆逊's last card:
        # 连营 draws before the second card is taken).
        self.open_invokes[name] = inv
        if name == "yiji":
            self.yiji = _Yiji(seat)
            if len(self.draw_pile) >= 2:
                self.yiji_draw()
            # else FreeKill reshuffles first (ShuffleDrawPile, after this line): the two cards are known then
        elif name == "guanxing":
            self.guanxing = seat

    def fanjian_suit(self, target: Any, fk_ids: list[int]) -> None:
        """反间: the suit the target named, from their reply; without one (a client replay, SmartAI), it is
        inferred from what followed: the card's own suit, changed to another if damage follows."""
        # (from v0.5.22 the choice is asked as AskForChoices, answered with a list of the one option named)
        reply = self.replies.pop((target, "AskForChoice"), None) or self.replies.pop((target, "AskForChoices"), None)
        named = None
        data = reply.data if reply is not None else None
        if isinstance(data, list) and len(data) == 1:
            data = data[0]
        if isinstance(data, str) and data.startswith("log_"):
            named = SUIT_CHOICES.get(data[4:])
        ev = self.emit(pb.Event(choose_suit=pb.ChooseSuit(seat=self.seat(target))))
        if named is not None:
            ev.choose_suit.suit = named
            return
        ev.choose_suit.suit = SUIT_CHOICES[self.table.cards[fk_ids[0]].suit]
        self.suits_inferred += 1
        self.fanjian_pending = (target, ev.choose_suit, len(self.events))

    def fan(self, who: Any) -> None:
        """朱雀羽扇 turns the 杀 just used into a 火杀: ours names it as a virtual card made by "fan" — but the
        lord's fan on the 杀 激将 obtained is the lord's invocation after the other character's answer."""
        if self.supplied_use is not None and self.supplied_use == who:
            self.supplied_use = None
            self.emit(pb.Event(invoke_skill=pb.InvokeSkill(seat=self.seat(who), skill="fan")))
            return
        card = self.last_card
        if card is None:
            raise self.fail("朱雀羽扇 without a 杀 to turn into a 火杀")
        if card.WhichOneof("kind") == "id":
            card.virtual.CopyFrom(pb.VirtualCard(name="fire_slash", subcards=[card.id], skill="fan"))
        else:  # a 杀 made by a skill (武圣, 龙胆, 丈八蛇矛): that skill first, then the fan
            v = card.virtual
            card.virtual.CopyFrom(pb.VirtualCard(name="fire_slash", subcards=list(v.subcards), skill="fan",
                                                 base_skill=v.skill))

    def yiji_draw(self) -> None:
        """遗计's two cards, the top of the pile, drawn as it is invoked."""
        assert self.yiji is not None
        self.yiji.drawn = True
        self.take_from_pile(2)
        self.emit(pb.Event(draw_cards=pb.DrawCards(seat=self.yiji.seat, reason=pb.DRAW_REASON_SKILL,
                                                   cards=[self.card(c) for c in self.draw_pile[:2]])))

    def yiji_give(self, fk_ids: list[int], to: Any) -> None:
        assert self.yiji is not None
        if self.seat(to) == self.yiji.seat:
            return  # kept: ours drew them into the hand already, and keeping is declining to give
        inv = pb.InvokeSkill(seat=self.yiji.seat, skill="yiji", cards=[self.card(c) for c in fk_ids],
                             targets=[self.seat(to)])
        self.emit(pb.Event(invoke_skill=inv))

    def log_GuanxingResult(self, data: dict[str, Any]) -> None:
        seat = self.guanxing
        self.guanxing = None
        if seat is None:
            return
        top, bottom = int(data.get("arg", 0)), int(data.get("arg2", 0))
        self.take_from_pile(top + bottom)  # the cards looked at came off the pile (a reshuffle first, if due)
        pile = self.draw_pile
        cc = pb.ChooseCards(seat=seat, cards=[self.card(c) for c in pile[:top]],
                            bottom=[self.card(c) for c in pile[len(pile) - bottom:]] if bottom else [])
        self.emit(pb.Event(choose_cards=cc))

    def log_ShowCard(self, data: dict[str, Any]) -> None:
        who, cards = self.actor(data), data.get("card") or []
        if who in self.seat_of and cards:
            self.emit(pb.Event(choose_cards=pb.ChooseCards(seat=self.seat(who), cards=[self.card(c) for c in cards])))

    # --- judgments

    def log_StartJudgeReason(self, data: dict[str, Any]) -> None:
        reason = str(data.get("arg", ""))
        who = self.actor(data)
        # 洛神 goes on judging while its owner wants: FreeKill logs the first invocation only.
        if reason == "luoshen" and not (self.invoke is not None and self.invoke[1] == "luoshen" and self.events
                                        and self.events[-1].HasField("invoke_skill")):
            self.emit(pb.Event(invoke_skill=pb.InvokeSkill(seat=self.seat(who), skill="luoshen")))
        self.judge_reason[who] = reason

    def log_InitialJudge(self, data: dict[str, Any]) -> None:
        who = self.actor(data)
        reason = self.judge_reason.pop(who, "")
        self.take_from_pile(1)
        self.emit(pb.Event(judgment=pb.Judgment(seat=self.seat(who), card=self.card(data.get("arg")),
                                                reason=JUDGE_REASONS.get(reason, reason))))

    # --- HP, dying, death

    def log_Damage(self, data: dict[str, Any]) -> None:
        victim = self.seat(self.actor(data))
        src = data.get("to") or []
        ev = pb.Event()
        d = ev.damage
        if src:
            d.source = self.seat(src[0])
        d.target = victim
        d.amount = int(data.get("arg", 0))
        d.nature = NATURES.get(str(data.get("arg2")), pb.DAMAGE_NATURE_NORMAL)
        pending = self.fanjian_pending
        if pending is not None:
            self.fanjian_pending = None
            # 反间's damage comes right after the card is taken (the choice, then the card chosen): a later damage
            # to the same character is not 反间's, which then did none.
            if pending[0] == self.actor(data) and len(self.events) == pending[2] + 1:
                # Damage followed: the suit named was another than the card's.
                pending[1].suit = pb.SUIT_SPADE if pending[1].suit != pb.SUIT_SPADE else pb.SUIT_HEART
        if self.actor(data) in self.chained:
            self.chained.discard(self.actor(data))
            d.chained = True
        self.effect_on(victim)
        self.emit(ev)
        self.damage[victim] = d

    def log_DamageWithNoFrom(self, data: dict[str, Any]) -> None:
        self.log_Damage({**data, "to": []})

    def log_ChainDamage(self, data: dict[str, Any]) -> None:
        self.chained.add(self.actor(data))

    def log_LoseHP(self, data: dict[str, Any]) -> None:
        seat = self.seat(self.actor(data))
        self.emit(pb.Event(lose_hp=pb.LoseHp(seat=seat, amount=int(data.get("arg", 0)),
                                             hp_after=self.hp.get(self.actor(data), 0))))

    def log_HealHP(self, data: dict[str, Any]) -> None:
        who = self.actor(data)
        seat = self.seat(who)
        self.effect_on(seat)
        if who in self.dying and self.hp.get(who, 0) > 0:
            self.dying.remove(who)
        self.emit(pb.Event(recover=pb.Recover(seat=seat, amount=int(data.get("arg", 0)),
                                              hp_after=self.hp.get(self.actor(data), 0))))

    def log_EnterDying(self, data: dict[str, Any]) -> None:
        self.dying.append(self.actor(data))
        self.emit(pb.Event(dying=pb.Dying(seat=self.seat(self.actor(data)))))

    def log_ChainStateChange(self, data: dict[str, Any]) -> None:
        self.effect_on(self.seat(self.actor(data)))

    def log_KillPlayer(self, data: dict[str, Any]) -> None:
        who = self.actor(data)
        ev = pb.Event()
        ev.death.seat = self.seat(who)
        killers = data.get("to") or []
        if killers:
            ev.death.killer = self.seat(killers[0])
        ev.death.role = ROLES.get(self.roles.get(who, ""), pb.ROLE_UNSPECIFIED)
        self.dead.add(who)
        if who in self.dying:
            self.dying.remove(who)
        self.emit(ev)

    def log_KillPlayerWithNoKiller(self, data: dict[str, Any]) -> None:
        self.log_KillPlayer({**data, "to": []})


def physical(card: Any) -> tuple[int, ...]:
    """The real cards of a GameLog card (an id, or a virtual card's subcards)."""
    if isinstance(card, list) and len(card) == 1:
        card = card[0]
    if isinstance(card, int) and not isinstance(card, bool):
        return (card,)
    if isinstance(card, dict):
        return tuple(c for c in card.get("6") or [] if isinstance(c, int))
    return ()


def players_of(messages: Iterable[Message]) -> int:
    for msg in messages:
        if msg.kind == NOTIFY and msg.cmd == "ArrangeSeats" and isinstance(msg.data, list):
            return len(msg.data)
    raise ImportFailure("the record has no seating (ArrangeSeats)")


def convert(messages: list[Message], *, version: str = DEFAULT_VERSION,
            packages: tuple[str, ...] = ("standard", "maneuvering")) -> Conversion:
    """Turn FreeKill's messages into our log (header with an explicit set-up, decisions, outcomes)."""
    stream = Stream(version=version, packages=packages)
    for msg in messages:
        stream.feed(msg)
    stream.finish()
    if stream.header is None:
        players_of(messages)  # (the record with no seating says so first)
        raise ImportFailure("the record ends before the game's first round: nothing to verify")
    log = pb.GameLog(header=stream.header)
    log.events.extend(stream.events)
    return Conversion(log, stream.sources, stream.notes, stream.reply_events)


class Stream:
    """The conversion made incremental: messages go in as the game is played (``feed``), and each event
    comes out as soon as no later message can change it — the header once the set-up is complete (the
    game's first round starts), then the events while the game is played; ``finish`` at the record's end.

    An event is held while the conversion may still complete it: the last card used or played until a
    request goes to another player (朱雀羽扇 turns that 杀 into a 火杀 after asking its user), a damage
    until its victim's HP is shown, the suit 反间's target named until damage shows it, a skill's
    invocation until its owner is asked to play again or the next turn starts (its cards move after
    it). Everything before a turn's start or a request to play a card is settled. ``changed`` lists the
    events that changed after they had been handed out (none in any game we have; the bridge reports
    them: the live log would then differ from the batch conversion)."""

    def __init__(self, *, version: str = DEFAULT_VERSION,
                 packages: tuple[str, ...] = ("standard", "maneuvering")) -> None:
        try:
            self.table = card_table(version, packages)
        except CardTableError as err:
            raise ImportFailure(str(err)) from None
        self.pending: list[Message] = []  # the set-up's messages, until the first round
        self.conv: Converter | None = None
        self.header: pb.GameHeader | None = None
        self.released = 0  # events handed out
        self.handed: list[bytes] = []  # their encodings when handed out (to check none changed after)
        self.changed: list[int] = []
        self.finished = False

    @property
    def events(self) -> list[pb.Event]:
        return self.conv.events if self.conv is not None else []

    @property
    def sources(self) -> list[int]:
        return self.conv.sources if self.conv is not None else []

    @property
    def notes(self) -> list[str]:
        return self.conv.notes if self.conv is not None else []

    @property
    def reply_events(self) -> dict[int, int]:
        return self.conv.reply_events if self.conv is not None else {}

    @property
    def over(self) -> bool:
        return self.conv is not None and self.conv.over

    def feed(self, msg: Message) -> list[pb.Event]:
        """Take the next message; returns the events it settled (in order)."""
        conv = self.conv
        if conv is None:
            self.pending.append(msg)
            if not (msg.kind == NOTIFY and msg.cmd == "GameLog" and isinstance(msg.data, dict)
                    and msg.data.get("type") in ("$RoundStart", "$TurnStart")):
                return []
            conv = Converter(self.pending, players_of(self.pending), self.table)
            start = conv.read_setup()
            self.header = conv.header()
            self.conv = conv
            for early in self.pending[start:]:
                conv.step(early)
            self.pending = []
            return self.settle(len(conv.events) if self.settles(msg) else self.held())
        settled = len(conv.events) if self.settles(msg) else None
        conv.step(msg)
        if conv.over:
            return self.settle(len(conv.events))  # the game is over: nothing after can change it
        return self.settle(self.held() if settled is None else max(settled, self.held()))

    @staticmethod
    def settles(msg: Message) -> bool:
        """Whether everything converted before ``msg`` is settled: a turn starts, or the player is asked to
        play a card (what they were doing has been carried out)."""
        if msg.kind == REQUEST:
            return msg.cmd == "PlayCard"
        return msg.kind == NOTIFY and msg.cmd == "GameLog" and isinstance(msg.data, dict) \
            and msg.data.get("type") in ("$TurnStart", "$RoundStart")

    def held(self) -> int:
        """The first event the conversion may still change (len(events) when none)."""
        conv = self.conv
        assert conv is not None
        events = conv.events
        open_parts: list[Any] = [*conv.damage.values(), *conv.open_invokes.values()]
        if conv.invoke is not None:
            open_parts.append(conv.invoke[0])
        if conv.fanjian_pending is not None:
            open_parts.append(conv.fanjian_pending[1])
        asked_other = conv.last_card is not None and self.asked_another(conv)
        if not asked_other:
            open_parts += [p for p in (conv.last_card, conv.last_use) if p is not None]
        if not open_parts:
            return len(events)
        wanted = {id(p) for p in open_parts}
        for i in range(self.released, len(events)):
            ev = events[i]
            kind = ev.WhichOneof("kind")
            if kind is None:
                continue
            part = getattr(ev, kind)
            if id(part) in wanted or (part.DESCRIPTOR.fields_by_name.get("card") is not None
                                      and id(part.card) in wanted):
                return i
        return len(events)

    def asked_another(self, conv: Converter) -> bool:
        """Whether a request has gone to another player than the last card's user since it was used."""
        i = len(conv.events) - 1
        card = conv.last_card
        while i >= self.released:
            ev = conv.events[i]
            kind = ev.WhichOneof("kind")
            if kind in ("use_card", "respond") and getattr(ev, kind).card is card:
                user = conv.fk_player[getattr(ev, kind).seat]
                return any(m.seq > conv.sources[i] and m.to and m.to[0] != user for m in conv.requests.values())
            i -= 1
        return True  # handed out already

    def settle(self, upto: int) -> list[pb.Event]:
        if upto <= self.released:
            return []
        out = self.events[self.released:upto]
        self.handed.extend(ev.SerializeToString(deterministic=True) for ev in out)
        self.released = upto
        return out

    def finish(self) -> list[pb.Event]:
        """The record has ended: the events still held, and the check that none handed out changed."""
        if self.finished:
            return []
        self.finished = True
        if self.conv is None:
            return []
        self.conv.close()
        out = self.settle(len(self.events))
        self.changed = [i for i, (ev, was) in enumerate(zip(self.events, self.handed, strict=True))
                        if ev.SerializeToString(deterministic=True) != was]
        return out


__all__ = ["Conversion", "ImportFailure", "Stream", "convert"]
