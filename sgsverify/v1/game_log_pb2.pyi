from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MODE_UNSPECIFIED: _ClassVar[Mode]
    MODE_IDENTITY: _ClassVar[Mode]
    MODE_HEGEMONY: _ClassVar[Mode]

class Role(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROLE_UNSPECIFIED: _ClassVar[Role]
    ROLE_LORD: _ClassVar[Role]
    ROLE_LOYALIST: _ClassVar[Role]
    ROLE_REBEL: _ClassVar[Role]
    ROLE_SPY: _ClassVar[Role]

class RoleVariant(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROLE_VARIANT_UNSPECIFIED: _ClassVar[RoleVariant]
    ROLE_VARIANT_STANDARD: _ClassVar[RoleVariant]
    ROLE_VARIANT_TWO_SPIES: _ClassVar[RoleVariant]

class GeneralsMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GENERALS_MODE_UNSPECIFIED: _ClassVar[GeneralsMode]
    GENERALS_MODE_WHITE: _ClassVar[GeneralsMode]
    GENERALS_MODE_STANDARD: _ClassVar[GeneralsMode]
    GENERALS_MODE_HEGEMONY: _ClassVar[GeneralsMode]

class GeneralSlot(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GENERAL_SLOT_UNSPECIFIED: _ClassVar[GeneralSlot]
    GENERAL_SLOT_MAIN: _ClassVar[GeneralSlot]
    GENERAL_SLOT_DEPUTY: _ClassVar[GeneralSlot]
    GENERAL_SLOT_BOTH: _ClassVar[GeneralSlot]

class RevealTiming(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REVEAL_TIMING_UNSPECIFIED: _ClassVar[RevealTiming]
    REVEAL_TIMING_START_PHASE: _ClassVar[RevealTiming]
    REVEAL_TIMING_SKILL: _ClassVar[RevealTiming]
    REVEAL_TIMING_DEATH: _ClassVar[RevealTiming]

class OutcomeRecording(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_RECORDING_UNSPECIFIED: _ClassVar[OutcomeRecording]
    OUTCOME_RECORDING_PARTIAL: _ClassVar[OutcomeRecording]
    OUTCOME_RECORDING_COMPLETE: _ClassVar[OutcomeRecording]

class DecisionSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DECISION_SOURCE_UNSPECIFIED: _ClassVar[DecisionSource]
    DECISION_SOURCE_CLIENT: _ClassVar[DecisionSource]
    DECISION_SOURCE_AI: _ClassVar[DecisionSource]
    DECISION_SOURCE_DEFAULT: _ClassVar[DecisionSource]

class Suit(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUIT_UNSPECIFIED: _ClassVar[Suit]
    SUIT_SPADE: _ClassVar[Suit]
    SUIT_CLUB: _ClassVar[Suit]
    SUIT_HEART: _ClassVar[Suit]
    SUIT_DIAMOND: _ClassVar[Suit]

class Gender(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GENDER_UNSPECIFIED: _ClassVar[Gender]
    GENDER_MALE: _ClassVar[Gender]
    GENDER_FEMALE: _ClassVar[Gender]

class Phase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PHASE_UNSPECIFIED: _ClassVar[Phase]
    PHASE_START: _ClassVar[Phase]
    PHASE_JUDGMENT: _ClassVar[Phase]
    PHASE_DRAW: _ClassVar[Phase]
    PHASE_PLAY: _ClassVar[Phase]
    PHASE_DISCARD: _ClassVar[Phase]
    PHASE_FINISH: _ClassVar[Phase]

class DamageNature(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DAMAGE_NATURE_NORMAL: _ClassVar[DamageNature]
    DAMAGE_NATURE_FIRE: _ClassVar[DamageNature]
    DAMAGE_NATURE_THUNDER: _ClassVar[DamageNature]

class Zone(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ZONE_UNSPECIFIED: _ClassVar[Zone]
    ZONE_HAND: _ClassVar[Zone]
    ZONE_EQUIPMENT: _ClassVar[Zone]
    ZONE_JUDGMENT: _ClassVar[Zone]
    ZONE_DRAW_PILE: _ClassVar[Zone]
    ZONE_DISCARD_PILE: _ClassVar[Zone]
    ZONE_PROCESSING: _ClassVar[Zone]
    ZONE_GENERAL: _ClassVar[Zone]

class DrawReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DRAW_REASON_UNSPECIFIED: _ClassVar[DrawReason]
    DRAW_REASON_INITIAL: _ClassVar[DrawReason]
    DRAW_REASON_DRAW_PHASE: _ClassVar[DrawReason]
    DRAW_REASON_CARD_EFFECT: _ClassVar[DrawReason]
    DRAW_REASON_KILL_REWARD: _ClassVar[DrawReason]
    DRAW_REASON_SKILL: _ClassVar[DrawReason]
    DRAW_REASON_RECAST: _ClassVar[DrawReason]
    DRAW_REASON_COMPANION: _ClassVar[DrawReason]
    DRAW_REASON_HALF_FISH: _ClassVar[DrawReason]

class MoveReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MOVE_REASON_UNSPECIFIED: _ClassVar[MoveReason]
    MOVE_REASON_KILL_PENALTY: _ClassVar[MoveReason]
    MOVE_REASON_DEATH: _ClassVar[MoveReason]
    MOVE_REASON_EQUIP_REPLACED: _ClassVar[MoveReason]
    MOVE_REASON_LIGHTNING_MOVES: _ClassVar[MoveReason]
    MOVE_REASON_WEAPON_GIVEN: _ClassVar[MoveReason]
    MOVE_REASON_LEFTOVER: _ClassVar[MoveReason]
    MOVE_REASON_TAKEN: _ClassVar[MoveReason]

class Side(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SIDE_UNSPECIFIED: _ClassVar[Side]
    SIDE_LORD: _ClassVar[Side]
    SIDE_REBELS: _ClassVar[Side]
    SIDE_SPY: _ClassVar[Side]
    SIDE_NONE: _ClassVar[Side]
    SIDE_KINGDOM: _ClassVar[Side]
MODE_UNSPECIFIED: Mode
MODE_IDENTITY: Mode
MODE_HEGEMONY: Mode
ROLE_UNSPECIFIED: Role
ROLE_LORD: Role
ROLE_LOYALIST: Role
ROLE_REBEL: Role
ROLE_SPY: Role
ROLE_VARIANT_UNSPECIFIED: RoleVariant
ROLE_VARIANT_STANDARD: RoleVariant
ROLE_VARIANT_TWO_SPIES: RoleVariant
GENERALS_MODE_UNSPECIFIED: GeneralsMode
GENERALS_MODE_WHITE: GeneralsMode
GENERALS_MODE_STANDARD: GeneralsMode
GENERALS_MODE_HEGEMONY: GeneralsMode
GENERAL_SLOT_UNSPECIFIED: GeneralSlot
GENERAL_SLOT_MAIN: GeneralSlot
GENERAL_SLOT_DEPUTY: GeneralSlot
GENERAL_SLOT_BOTH: GeneralSlot
REVEAL_TIMING_UNSPECIFIED: RevealTiming
REVEAL_TIMING_START_PHASE: RevealTiming
REVEAL_TIMING_SKILL: RevealTiming
REVEAL_TIMING_DEATH: RevealTiming
OUTCOME_RECORDING_UNSPECIFIED: OutcomeRecording
OUTCOME_RECORDING_PARTIAL: OutcomeRecording
OUTCOME_RECORDING_COMPLETE: OutcomeRecording
DECISION_SOURCE_UNSPECIFIED: DecisionSource
DECISION_SOURCE_CLIENT: DecisionSource
DECISION_SOURCE_AI: DecisionSource
DECISION_SOURCE_DEFAULT: DecisionSource
SUIT_UNSPECIFIED: Suit
SUIT_SPADE: Suit
SUIT_CLUB: Suit
SUIT_HEART: Suit
SUIT_DIAMOND: Suit
GENDER_UNSPECIFIED: Gender
GENDER_MALE: Gender
GENDER_FEMALE: Gender
PHASE_UNSPECIFIED: Phase
PHASE_START: Phase
PHASE_JUDGMENT: Phase
PHASE_DRAW: Phase
PHASE_PLAY: Phase
PHASE_DISCARD: Phase
PHASE_FINISH: Phase
DAMAGE_NATURE_NORMAL: DamageNature
DAMAGE_NATURE_FIRE: DamageNature
DAMAGE_NATURE_THUNDER: DamageNature
ZONE_UNSPECIFIED: Zone
ZONE_HAND: Zone
ZONE_EQUIPMENT: Zone
ZONE_JUDGMENT: Zone
ZONE_DRAW_PILE: Zone
ZONE_DISCARD_PILE: Zone
ZONE_PROCESSING: Zone
ZONE_GENERAL: Zone
DRAW_REASON_UNSPECIFIED: DrawReason
DRAW_REASON_INITIAL: DrawReason
DRAW_REASON_DRAW_PHASE: DrawReason
DRAW_REASON_CARD_EFFECT: DrawReason
DRAW_REASON_KILL_REWARD: DrawReason
DRAW_REASON_SKILL: DrawReason
DRAW_REASON_RECAST: DrawReason
DRAW_REASON_COMPANION: DrawReason
DRAW_REASON_HALF_FISH: DrawReason
MOVE_REASON_UNSPECIFIED: MoveReason
MOVE_REASON_KILL_PENALTY: MoveReason
MOVE_REASON_DEATH: MoveReason
MOVE_REASON_EQUIP_REPLACED: MoveReason
MOVE_REASON_LIGHTNING_MOVES: MoveReason
MOVE_REASON_WEAPON_GIVEN: MoveReason
MOVE_REASON_LEFTOVER: MoveReason
MOVE_REASON_TAKEN: MoveReason
SIDE_UNSPECIFIED: Side
SIDE_LORD: Side
SIDE_REBELS: Side
SIDE_SPY: Side
SIDE_NONE: Side
SIDE_KINGDOM: Side

class GameOptions(_message.Message):
    __slots__ = ("packages", "role_variant", "generals", "max_reshuffles", "outcomes", "recorded_reshuffles", "role_table", "candidates", "rotating_deal", "rebirth", "last_three_clock", "protected_seat", "dark_souls", "server_record")
    PACKAGES_FIELD_NUMBER: _ClassVar[int]
    ROLE_VARIANT_FIELD_NUMBER: _ClassVar[int]
    GENERALS_FIELD_NUMBER: _ClassVar[int]
    MAX_RESHUFFLES_FIELD_NUMBER: _ClassVar[int]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    RECORDED_RESHUFFLES_FIELD_NUMBER: _ClassVar[int]
    ROLE_TABLE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    ROTATING_DEAL_FIELD_NUMBER: _ClassVar[int]
    REBIRTH_FIELD_NUMBER: _ClassVar[int]
    LAST_THREE_CLOCK_FIELD_NUMBER: _ClassVar[int]
    PROTECTED_SEAT_FIELD_NUMBER: _ClassVar[int]
    DARK_SOULS_FIELD_NUMBER: _ClassVar[int]
    SERVER_RECORD_FIELD_NUMBER: _ClassVar[int]
    packages: _containers.RepeatedScalarFieldContainer[str]
    role_variant: RoleVariant
    generals: GeneralsMode
    max_reshuffles: int
    outcomes: OutcomeRecording
    recorded_reshuffles: bool
    role_table: RoleTable
    candidates: int
    rotating_deal: bool
    rebirth: bool
    last_three_clock: bool
    protected_seat: int
    dark_souls: bool
    server_record: bool
    def __init__(self, packages: _Optional[_Iterable[str]] = ..., role_variant: _Optional[_Union[RoleVariant, str]] = ..., generals: _Optional[_Union[GeneralsMode, str]] = ..., max_reshuffles: _Optional[int] = ..., outcomes: _Optional[_Union[OutcomeRecording, str]] = ..., recorded_reshuffles: _Optional[bool] = ..., role_table: _Optional[_Union[RoleTable, _Mapping]] = ..., candidates: _Optional[int] = ..., rotating_deal: _Optional[bool] = ..., rebirth: _Optional[bool] = ..., last_three_clock: _Optional[bool] = ..., protected_seat: _Optional[int] = ..., dark_souls: _Optional[bool] = ..., server_record: _Optional[bool] = ...) -> None: ...

class RoleTable(_message.Message):
    __slots__ = ("lords", "loyalists", "rebels", "spies")
    LORDS_FIELD_NUMBER: _ClassVar[int]
    LOYALISTS_FIELD_NUMBER: _ClassVar[int]
    REBELS_FIELD_NUMBER: _ClassVar[int]
    SPIES_FIELD_NUMBER: _ClassVar[int]
    lords: int
    loyalists: int
    rebels: int
    spies: int
    def __init__(self, lords: _Optional[int] = ..., loyalists: _Optional[int] = ..., rebels: _Optional[int] = ..., spies: _Optional[int] = ...) -> None: ...

class Seat(_message.Message):
    __slots__ = ("player", "role", "general", "gender", "deputy_general")
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    GENERAL_FIELD_NUMBER: _ClassVar[int]
    GENDER_FIELD_NUMBER: _ClassVar[int]
    DEPUTY_GENERAL_FIELD_NUMBER: _ClassVar[int]
    player: str
    role: Role
    general: str
    gender: Gender
    deputy_general: str
    def __init__(self, player: _Optional[str] = ..., role: _Optional[_Union[Role, str]] = ..., general: _Optional[str] = ..., gender: _Optional[_Union[Gender, str]] = ..., deputy_general: _Optional[str] = ...) -> None: ...

class StartingHand(_message.Message):
    __slots__ = ("seat", "cards")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    cards: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, seat: _Optional[int] = ..., cards: _Optional[_Iterable[int]] = ...) -> None: ...

class Setup(_message.Message):
    __slots__ = ("draw_pile", "stacked_top", "starting_hands")
    DRAW_PILE_FIELD_NUMBER: _ClassVar[int]
    STACKED_TOP_FIELD_NUMBER: _ClassVar[int]
    STARTING_HANDS_FIELD_NUMBER: _ClassVar[int]
    draw_pile: _containers.RepeatedScalarFieldContainer[int]
    stacked_top: bool
    starting_hands: _containers.RepeatedCompositeFieldContainer[StartingHand]
    def __init__(self, draw_pile: _Optional[_Iterable[int]] = ..., stacked_top: _Optional[bool] = ..., starting_hands: _Optional[_Iterable[_Union[StartingHand, _Mapping]]] = ...) -> None: ...

class GameHeader(_message.Message):
    __slots__ = ("ruleset", "mode", "options", "seed", "seats", "setup", "recorder", "origin")
    RULESET_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    SETUP_FIELD_NUMBER: _ClassVar[int]
    RECORDER_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    ruleset: str
    mode: Mode
    options: GameOptions
    seed: int
    seats: _containers.RepeatedCompositeFieldContainer[Seat]
    setup: Setup
    recorder: str
    origin: LogOrigin
    def __init__(self, ruleset: _Optional[str] = ..., mode: _Optional[_Union[Mode, str]] = ..., options: _Optional[_Union[GameOptions, _Mapping]] = ..., seed: _Optional[int] = ..., seats: _Optional[_Iterable[_Union[Seat, _Mapping]]] = ..., setup: _Optional[_Union[Setup, _Mapping]] = ..., recorder: _Optional[str] = ..., origin: _Optional[_Union[LogOrigin, _Mapping]] = ...) -> None: ...

class LogOrigin(_message.Message):
    __slots__ = ("engine", "engine_version", "format", "source", "notes")
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    ENGINE_VERSION_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    engine: str
    engine_version: str
    format: str
    source: str
    notes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, engine: _Optional[str] = ..., engine_version: _Optional[str] = ..., format: _Optional[str] = ..., source: _Optional[str] = ..., notes: _Optional[_Iterable[str]] = ...) -> None: ...

class VirtualCard(_message.Message):
    __slots__ = ("name", "subcards", "skill", "base_skill")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBCARDS_FIELD_NUMBER: _ClassVar[int]
    SKILL_FIELD_NUMBER: _ClassVar[int]
    BASE_SKILL_FIELD_NUMBER: _ClassVar[int]
    name: str
    subcards: _containers.RepeatedScalarFieldContainer[int]
    skill: str
    base_skill: str
    def __init__(self, name: _Optional[str] = ..., subcards: _Optional[_Iterable[int]] = ..., skill: _Optional[str] = ..., base_skill: _Optional[str] = ...) -> None: ...

class CardRef(_message.Message):
    __slots__ = ("id", "virtual")
    ID_FIELD_NUMBER: _ClassVar[int]
    VIRTUAL_FIELD_NUMBER: _ClassVar[int]
    id: int
    virtual: VirtualCard
    def __init__(self, id: _Optional[int] = ..., virtual: _Optional[_Union[VirtualCard, _Mapping]] = ...) -> None: ...

class UseCard(_message.Message):
    __slots__ = ("seat", "card", "targets", "recast")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    RECAST_FIELD_NUMBER: _ClassVar[int]
    seat: int
    card: CardRef
    targets: _containers.RepeatedScalarFieldContainer[int]
    recast: bool
    def __init__(self, seat: _Optional[int] = ..., card: _Optional[_Union[CardRef, _Mapping]] = ..., targets: _Optional[_Iterable[int]] = ..., recast: _Optional[bool] = ...) -> None: ...

class Respond(_message.Message):
    __slots__ = ("seat", "card", "target", "trick_card", "whole_kingdom")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    TRICK_CARD_FIELD_NUMBER: _ClassVar[int]
    WHOLE_KINGDOM_FIELD_NUMBER: _ClassVar[int]
    seat: int
    card: CardRef
    target: int
    trick_card: int
    whole_kingdom: bool
    def __init__(self, seat: _Optional[int] = ..., card: _Optional[_Union[CardRef, _Mapping]] = ..., target: _Optional[int] = ..., trick_card: _Optional[int] = ..., whole_kingdom: _Optional[bool] = ...) -> None: ...

class Decline(_message.Message):
    __slots__ = ("seat",)
    SEAT_FIELD_NUMBER: _ClassVar[int]
    seat: int
    def __init__(self, seat: _Optional[int] = ...) -> None: ...

class ChooseCards(_message.Message):
    __slots__ = ("seat", "cards", "bottom")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    BOTTOM_FIELD_NUMBER: _ClassVar[int]
    seat: int
    cards: _containers.RepeatedScalarFieldContainer[int]
    bottom: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, seat: _Optional[int] = ..., cards: _Optional[_Iterable[int]] = ..., bottom: _Optional[_Iterable[int]] = ...) -> None: ...

class ChooseSuit(_message.Message):
    __slots__ = ("seat", "suit")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    SUIT_FIELD_NUMBER: _ClassVar[int]
    seat: int
    suit: Suit
    def __init__(self, seat: _Optional[int] = ..., suit: _Optional[_Union[Suit, str]] = ...) -> None: ...

class InvokeSkill(_message.Message):
    __slots__ = ("seat", "skill", "cards", "targets")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    SKILL_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    skill: str
    cards: _containers.RepeatedScalarFieldContainer[int]
    targets: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, seat: _Optional[int] = ..., skill: _Optional[str] = ..., cards: _Optional[_Iterable[int]] = ..., targets: _Optional[_Iterable[int]] = ...) -> None: ...

class EndPlayPhase(_message.Message):
    __slots__ = ("seat",)
    SEAT_FIELD_NUMBER: _ClassVar[int]
    seat: int
    def __init__(self, seat: _Optional[int] = ...) -> None: ...

class PickGeneral(_message.Message):
    __slots__ = ("seat", "general", "deputy")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    GENERAL_FIELD_NUMBER: _ClassVar[int]
    DEPUTY_FIELD_NUMBER: _ClassVar[int]
    seat: int
    general: str
    deputy: str
    def __init__(self, seat: _Optional[int] = ..., general: _Optional[str] = ..., deputy: _Optional[str] = ...) -> None: ...

class RevealGeneral(_message.Message):
    __slots__ = ("seat", "which", "timing", "skill")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    WHICH_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    SKILL_FIELD_NUMBER: _ClassVar[int]
    seat: int
    which: GeneralSlot
    timing: RevealTiming
    skill: str
    def __init__(self, seat: _Optional[int] = ..., which: _Optional[_Union[GeneralSlot, str]] = ..., timing: _Optional[_Union[RevealTiming, str]] = ..., skill: _Optional[str] = ...) -> None: ...

class ChooseOption(_message.Message):
    __slots__ = ("seat", "option")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    OPTION_FIELD_NUMBER: _ClassVar[int]
    seat: int
    option: str
    def __init__(self, seat: _Optional[int] = ..., option: _Optional[str] = ...) -> None: ...

class Sacrifice(_message.Message):
    __slots__ = ("seat", "target", "card")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    seat: int
    target: int
    card: int
    def __init__(self, seat: _Optional[int] = ..., target: _Optional[int] = ..., card: _Optional[int] = ...) -> None: ...

class TurnStart(_message.Message):
    __slots__ = ("seat", "turn")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    seat: int
    turn: int
    def __init__(self, seat: _Optional[int] = ..., turn: _Optional[int] = ...) -> None: ...

class PhaseStart(_message.Message):
    __slots__ = ("seat", "phase")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    seat: int
    phase: Phase
    def __init__(self, seat: _Optional[int] = ..., phase: _Optional[_Union[Phase, str]] = ...) -> None: ...

class DrawCards(_message.Message):
    __slots__ = ("seat", "cards", "reason")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    seat: int
    cards: _containers.RepeatedScalarFieldContainer[int]
    reason: DrawReason
    def __init__(self, seat: _Optional[int] = ..., cards: _Optional[_Iterable[int]] = ..., reason: _Optional[_Union[DrawReason, str]] = ...) -> None: ...

class Judgment(_message.Message):
    __slots__ = ("seat", "card", "reason")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    seat: int
    card: int
    reason: str
    def __init__(self, seat: _Optional[int] = ..., card: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class Reveal(_message.Message):
    __slots__ = ("cards", "reason")
    CARDS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    cards: _containers.RepeatedScalarFieldContainer[int]
    reason: str
    def __init__(self, cards: _Optional[_Iterable[int]] = ..., reason: _Optional[str] = ...) -> None: ...

class Damage(_message.Message):
    __slots__ = ("source", "target", "amount", "nature", "hp_after", "chained")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    NATURE_FIELD_NUMBER: _ClassVar[int]
    HP_AFTER_FIELD_NUMBER: _ClassVar[int]
    CHAINED_FIELD_NUMBER: _ClassVar[int]
    source: int
    target: int
    amount: int
    nature: DamageNature
    hp_after: int
    chained: bool
    def __init__(self, source: _Optional[int] = ..., target: _Optional[int] = ..., amount: _Optional[int] = ..., nature: _Optional[_Union[DamageNature, str]] = ..., hp_after: _Optional[int] = ..., chained: _Optional[bool] = ...) -> None: ...

class LoseHp(_message.Message):
    __slots__ = ("seat", "amount", "hp_after")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    HP_AFTER_FIELD_NUMBER: _ClassVar[int]
    seat: int
    amount: int
    hp_after: int
    def __init__(self, seat: _Optional[int] = ..., amount: _Optional[int] = ..., hp_after: _Optional[int] = ...) -> None: ...

class Recover(_message.Message):
    __slots__ = ("seat", "amount", "hp_after")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    HP_AFTER_FIELD_NUMBER: _ClassVar[int]
    seat: int
    amount: int
    hp_after: int
    def __init__(self, seat: _Optional[int] = ..., amount: _Optional[int] = ..., hp_after: _Optional[int] = ...) -> None: ...

class Dying(_message.Message):
    __slots__ = ("seat",)
    SEAT_FIELD_NUMBER: _ClassVar[int]
    seat: int
    def __init__(self, seat: _Optional[int] = ...) -> None: ...

class Death(_message.Message):
    __slots__ = ("seat", "killer", "role", "kingdom")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    KILLER_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    KINGDOM_FIELD_NUMBER: _ClassVar[int]
    seat: int
    killer: int
    role: Role
    kingdom: str
    def __init__(self, seat: _Optional[int] = ..., killer: _Optional[int] = ..., role: _Optional[_Union[Role, str]] = ..., kingdom: _Optional[str] = ...) -> None: ...

class GeneralRevealed(_message.Message):
    __slots__ = ("seat", "slot", "general", "timing")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    GENERAL_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    seat: int
    slot: GeneralSlot
    general: str
    timing: RevealTiming
    def __init__(self, seat: _Optional[int] = ..., slot: _Optional[_Union[GeneralSlot, str]] = ..., general: _Optional[str] = ..., timing: _Optional[_Union[RevealTiming, str]] = ...) -> None: ...

class KingdomFixed(_message.Message):
    __slots__ = ("seat", "kingdom", "general_kingdom")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    KINGDOM_FIELD_NUMBER: _ClassVar[int]
    GENERAL_KINGDOM_FIELD_NUMBER: _ClassVar[int]
    seat: int
    kingdom: str
    general_kingdom: str
    def __init__(self, seat: _Optional[int] = ..., kingdom: _Optional[str] = ..., general_kingdom: _Optional[str] = ...) -> None: ...

class CardsMoved(_message.Message):
    __slots__ = ("cards", "from_seat", "from_zone", "to_seat", "to_zone", "reason")
    CARDS_FIELD_NUMBER: _ClassVar[int]
    FROM_SEAT_FIELD_NUMBER: _ClassVar[int]
    FROM_ZONE_FIELD_NUMBER: _ClassVar[int]
    TO_SEAT_FIELD_NUMBER: _ClassVar[int]
    TO_ZONE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    cards: _containers.RepeatedScalarFieldContainer[int]
    from_seat: int
    from_zone: Zone
    to_seat: int
    to_zone: Zone
    reason: MoveReason
    def __init__(self, cards: _Optional[_Iterable[int]] = ..., from_seat: _Optional[int] = ..., from_zone: _Optional[_Union[Zone, str]] = ..., to_seat: _Optional[int] = ..., to_zone: _Optional[_Union[Zone, str]] = ..., reason: _Optional[_Union[MoveReason, str]] = ...) -> None: ...

class Reshuffle(_message.Message):
    __slots__ = ("order",)
    ORDER_FIELD_NUMBER: _ClassVar[int]
    order: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, order: _Optional[_Iterable[int]] = ...) -> None: ...

class GameOver(_message.Message):
    __slots__ = ("side", "winners", "kingdom", "scores")
    SIDE_FIELD_NUMBER: _ClassVar[int]
    WINNERS_FIELD_NUMBER: _ClassVar[int]
    KINGDOM_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    side: Side
    winners: _containers.RepeatedScalarFieldContainer[int]
    kingdom: str
    scores: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, side: _Optional[_Union[Side, str]] = ..., winners: _Optional[_Iterable[int]] = ..., kingdom: _Optional[str] = ..., scores: _Optional[_Iterable[int]] = ...) -> None: ...

class Rebirth(_message.Message):
    __slots__ = ("seat", "general", "max_hp", "hp_after")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    GENERAL_FIELD_NUMBER: _ClassVar[int]
    MAX_HP_FIELD_NUMBER: _ClassVar[int]
    HP_AFTER_FIELD_NUMBER: _ClassVar[int]
    seat: int
    general: str
    max_hp: int
    hp_after: int
    def __init__(self, seat: _Optional[int] = ..., general: _Optional[str] = ..., max_hp: _Optional[int] = ..., hp_after: _Optional[int] = ...) -> None: ...

class Possess(_message.Message):
    __slots__ = ("seat", "host")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    seat: int
    host: int
    def __init__(self, seat: _Optional[int] = ..., host: _Optional[int] = ...) -> None: ...

class SoulAct(_message.Message):
    __slots__ = ("seat", "card")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    seat: int
    card: int
    def __init__(self, seat: _Optional[int] = ..., card: _Optional[int] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("use_card", "respond", "decline", "choose_cards", "invoke_skill", "end_play_phase", "pick_general", "choose_suit", "reveal_general", "choose_option", "turn_start", "phase_start", "draw_cards", "judgment", "reveal", "damage", "lose_hp", "recover", "dying", "death", "cards_moved", "reshuffle", "game_over", "general_revealed", "kingdom_fixed", "sacrifice", "rebirth", "possess", "soul_act", "source")
    USE_CARD_FIELD_NUMBER: _ClassVar[int]
    RESPOND_FIELD_NUMBER: _ClassVar[int]
    DECLINE_FIELD_NUMBER: _ClassVar[int]
    CHOOSE_CARDS_FIELD_NUMBER: _ClassVar[int]
    INVOKE_SKILL_FIELD_NUMBER: _ClassVar[int]
    END_PLAY_PHASE_FIELD_NUMBER: _ClassVar[int]
    PICK_GENERAL_FIELD_NUMBER: _ClassVar[int]
    CHOOSE_SUIT_FIELD_NUMBER: _ClassVar[int]
    REVEAL_GENERAL_FIELD_NUMBER: _ClassVar[int]
    CHOOSE_OPTION_FIELD_NUMBER: _ClassVar[int]
    TURN_START_FIELD_NUMBER: _ClassVar[int]
    PHASE_START_FIELD_NUMBER: _ClassVar[int]
    DRAW_CARDS_FIELD_NUMBER: _ClassVar[int]
    JUDGMENT_FIELD_NUMBER: _ClassVar[int]
    REVEAL_FIELD_NUMBER: _ClassVar[int]
    DAMAGE_FIELD_NUMBER: _ClassVar[int]
    LOSE_HP_FIELD_NUMBER: _ClassVar[int]
    RECOVER_FIELD_NUMBER: _ClassVar[int]
    DYING_FIELD_NUMBER: _ClassVar[int]
    DEATH_FIELD_NUMBER: _ClassVar[int]
    CARDS_MOVED_FIELD_NUMBER: _ClassVar[int]
    RESHUFFLE_FIELD_NUMBER: _ClassVar[int]
    GAME_OVER_FIELD_NUMBER: _ClassVar[int]
    GENERAL_REVEALED_FIELD_NUMBER: _ClassVar[int]
    KINGDOM_FIXED_FIELD_NUMBER: _ClassVar[int]
    SACRIFICE_FIELD_NUMBER: _ClassVar[int]
    REBIRTH_FIELD_NUMBER: _ClassVar[int]
    POSSESS_FIELD_NUMBER: _ClassVar[int]
    SOUL_ACT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    use_card: UseCard
    respond: Respond
    decline: Decline
    choose_cards: ChooseCards
    invoke_skill: InvokeSkill
    end_play_phase: EndPlayPhase
    pick_general: PickGeneral
    choose_suit: ChooseSuit
    reveal_general: RevealGeneral
    choose_option: ChooseOption
    turn_start: TurnStart
    phase_start: PhaseStart
    draw_cards: DrawCards
    judgment: Judgment
    reveal: Reveal
    damage: Damage
    lose_hp: LoseHp
    recover: Recover
    dying: Dying
    death: Death
    cards_moved: CardsMoved
    reshuffle: Reshuffle
    game_over: GameOver
    general_revealed: GeneralRevealed
    kingdom_fixed: KingdomFixed
    sacrifice: Sacrifice
    rebirth: Rebirth
    possess: Possess
    soul_act: SoulAct
    source: DecisionSource
    def __init__(self, use_card: _Optional[_Union[UseCard, _Mapping]] = ..., respond: _Optional[_Union[Respond, _Mapping]] = ..., decline: _Optional[_Union[Decline, _Mapping]] = ..., choose_cards: _Optional[_Union[ChooseCards, _Mapping]] = ..., invoke_skill: _Optional[_Union[InvokeSkill, _Mapping]] = ..., end_play_phase: _Optional[_Union[EndPlayPhase, _Mapping]] = ..., pick_general: _Optional[_Union[PickGeneral, _Mapping]] = ..., choose_suit: _Optional[_Union[ChooseSuit, _Mapping]] = ..., reveal_general: _Optional[_Union[RevealGeneral, _Mapping]] = ..., choose_option: _Optional[_Union[ChooseOption, _Mapping]] = ..., turn_start: _Optional[_Union[TurnStart, _Mapping]] = ..., phase_start: _Optional[_Union[PhaseStart, _Mapping]] = ..., draw_cards: _Optional[_Union[DrawCards, _Mapping]] = ..., judgment: _Optional[_Union[Judgment, _Mapping]] = ..., reveal: _Optional[_Union[Reveal, _Mapping]] = ..., damage: _Optional[_Union[Damage, _Mapping]] = ..., lose_hp: _Optional[_Union[LoseHp, _Mapping]] = ..., recover: _Optional[_Union[Recover, _Mapping]] = ..., dying: _Optional[_Union[Dying, _Mapping]] = ..., death: _Optional[_Union[Death, _Mapping]] = ..., cards_moved: _Optional[_Union[CardsMoved, _Mapping]] = ..., reshuffle: _Optional[_Union[Reshuffle, _Mapping]] = ..., game_over: _Optional[_Union[GameOver, _Mapping]] = ..., general_revealed: _Optional[_Union[GeneralRevealed, _Mapping]] = ..., kingdom_fixed: _Optional[_Union[KingdomFixed, _Mapping]] = ..., sacrifice: _Optional[_Union[Sacrifice, _Mapping]] = ..., rebirth: _Optional[_Union[Rebirth, _Mapping]] = ..., possess: _Optional[_Union[Possess, _Mapping]] = ..., soul_act: _Optional[_Union[SoulAct, _Mapping]] = ..., source: _Optional[_Union[DecisionSource, str]] = ...) -> None: ...

class GameLog(_message.Message):
    __slots__ = ("header", "events")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    header: GameHeader
    events: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, header: _Optional[_Union[GameHeader, _Mapping]] = ..., events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ...) -> None: ...
