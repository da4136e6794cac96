from sgsverify.v1 import game_log_pb2 as _game_log_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STATUS_UNSPECIFIED: _ClassVar[Status]
    STATUS_OK: _ClassVar[Status]
    STATUS_ILLEGAL: _ClassVar[Status]
    STATUS_MISMATCH: _ClassVar[Status]
    STATUS_MALFORMED: _ClassVar[Status]
    STATUS_DERIVED: _ClassVar[Status]
    STATUS_NOT_CHECKED: _ClassVar[Status]

class Handling(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HANDLING_UNSPECIFIED: _ClassVar[Handling]
    HANDLING_APPLIED: _ClassVar[Handling]
    HANDLING_REJECTED: _ClassVar[Handling]
    HANDLING_ADOPTED: _ClassVar[Handling]
    HANDLING_KEPT_DERIVED: _ClassVar[Handling]
    HANDLING_IGNORED: _ClassVar[Handling]
    HANDLING_DERIVED: _ClassVar[Handling]

class ServerVerdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SERVER_VERDICT_UNSPECIFIED: _ClassVar[ServerVerdict]
    SERVER_VERDICT_OK: _ClassVar[ServerVerdict]
    SERVER_VERDICT_REFUSED: _ClassVar[ServerVerdict]
    SERVER_VERDICT_UNJUDGED: _ClassVar[ServerVerdict]
STATUS_UNSPECIFIED: Status
STATUS_OK: Status
STATUS_ILLEGAL: Status
STATUS_MISMATCH: Status
STATUS_MALFORMED: Status
STATUS_DERIVED: Status
STATUS_NOT_CHECKED: Status
HANDLING_UNSPECIFIED: Handling
HANDLING_APPLIED: Handling
HANDLING_REJECTED: Handling
HANDLING_ADOPTED: Handling
HANDLING_KEPT_DERIVED: Handling
HANDLING_IGNORED: Handling
HANDLING_DERIVED: Handling
SERVER_VERDICT_UNSPECIFIED: ServerVerdict
SERVER_VERDICT_OK: ServerVerdict
SERVER_VERDICT_REFUSED: ServerVerdict
SERVER_VERDICT_UNJUDGED: ServerVerdict

class Violation(_message.Message):
    __slots__ = ("code", "message", "seat", "card", "rule", "handling")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    HANDLING_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    seat: int
    card: int
    rule: str
    handling: Handling
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., seat: _Optional[int] = ..., card: _Optional[int] = ..., rule: _Optional[str] = ..., handling: _Optional[_Union[Handling, str]] = ...) -> None: ...

class Annotation(_message.Message):
    __slots__ = ("index", "derived", "event", "status", "violations", "applied", "digest", "source")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    DERIVED_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    index: int
    derived: bool
    event: _game_log_pb2.Event
    status: Status
    violations: _containers.RepeatedCompositeFieldContainer[Violation]
    applied: bool
    digest: bytes
    source: _game_log_pb2.DecisionSource
    def __init__(self, index: _Optional[int] = ..., derived: _Optional[bool] = ..., event: _Optional[_Union[_game_log_pb2.Event, _Mapping]] = ..., status: _Optional[_Union[Status, str]] = ..., violations: _Optional[_Iterable[_Union[Violation, _Mapping]]] = ..., applied: _Optional[bool] = ..., digest: _Optional[bytes] = ..., source: _Optional[_Union[_game_log_pb2.DecisionSource, str]] = ...) -> None: ...

class GameResult(_message.Message):
    __slots__ = ("finished", "side", "winners", "reason", "scores")
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    SIDE_FIELD_NUMBER: _ClassVar[int]
    WINNERS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    finished: bool
    side: _game_log_pb2.Side
    winners: _containers.RepeatedScalarFieldContainer[int]
    reason: str
    scores: _containers.RepeatedCompositeFieldContainer[SeatScore]
    def __init__(self, finished: _Optional[bool] = ..., side: _Optional[_Union[_game_log_pb2.Side, str]] = ..., winners: _Optional[_Iterable[int]] = ..., reason: _Optional[str] = ..., scores: _Optional[_Iterable[_Union[SeatScore, _Mapping]]] = ...) -> None: ...

class SeatScore(_message.Message):
    __slots__ = ("seat", "score", "basis")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    BASIS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    score: int
    basis: str
    def __init__(self, seat: _Optional[int] = ..., score: _Optional[int] = ..., basis: _Optional[str] = ...) -> None: ...

class AnnotatedReplay(_message.Message):
    __slots__ = ("engine_version", "log_sha256", "annotations", "result", "violation_count", "violation_codes", "followed", "stopped_at", "stopped_reason", "header_violations", "final_digest", "header_notices", "server_checks", "server_judge", "not_replayed", "coverage", "disagreements")
    ENGINE_VERSION_FIELD_NUMBER: _ClassVar[int]
    LOG_SHA256_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    VIOLATION_COUNT_FIELD_NUMBER: _ClassVar[int]
    VIOLATION_CODES_FIELD_NUMBER: _ClassVar[int]
    FOLLOWED_FIELD_NUMBER: _ClassVar[int]
    STOPPED_AT_FIELD_NUMBER: _ClassVar[int]
    STOPPED_REASON_FIELD_NUMBER: _ClassVar[int]
    HEADER_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    FINAL_DIGEST_FIELD_NUMBER: _ClassVar[int]
    HEADER_NOTICES_FIELD_NUMBER: _ClassVar[int]
    SERVER_CHECKS_FIELD_NUMBER: _ClassVar[int]
    SERVER_JUDGE_FIELD_NUMBER: _ClassVar[int]
    NOT_REPLAYED_FIELD_NUMBER: _ClassVar[int]
    COVERAGE_FIELD_NUMBER: _ClassVar[int]
    DISAGREEMENTS_FIELD_NUMBER: _ClassVar[int]
    engine_version: str
    log_sha256: str
    annotations: _containers.RepeatedCompositeFieldContainer[Annotation]
    result: GameResult
    violation_count: int
    violation_codes: _containers.RepeatedScalarFieldContainer[str]
    followed: bool
    stopped_at: int
    stopped_reason: str
    header_violations: _containers.RepeatedCompositeFieldContainer[Violation]
    final_digest: bytes
    header_notices: _containers.RepeatedCompositeFieldContainer[HeaderNotice]
    server_checks: _containers.RepeatedCompositeFieldContainer[ServerCheck]
    server_judge: str
    not_replayed: str
    coverage: Coverage
    disagreements: _containers.RepeatedCompositeFieldContainer[Disagreement]
    def __init__(self, engine_version: _Optional[str] = ..., log_sha256: _Optional[str] = ..., annotations: _Optional[_Iterable[_Union[Annotation, _Mapping]]] = ..., result: _Optional[_Union[GameResult, _Mapping]] = ..., violation_count: _Optional[int] = ..., violation_codes: _Optional[_Iterable[str]] = ..., followed: _Optional[bool] = ..., stopped_at: _Optional[int] = ..., stopped_reason: _Optional[str] = ..., header_violations: _Optional[_Iterable[_Union[Violation, _Mapping]]] = ..., final_digest: _Optional[bytes] = ..., header_notices: _Optional[_Iterable[_Union[HeaderNotice, _Mapping]]] = ..., server_checks: _Optional[_Iterable[_Union[ServerCheck, _Mapping]]] = ..., server_judge: _Optional[str] = ..., not_replayed: _Optional[str] = ..., coverage: _Optional[_Union[Coverage, _Mapping]] = ..., disagreements: _Optional[_Iterable[_Union[Disagreement, _Mapping]]] = ...) -> None: ...

class ServerCheck(_message.Message):
    __slots__ = ("record", "reply", "player", "seat", "request", "source", "verdict", "code", "why", "event")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    REPLY_FIELD_NUMBER: _ClassVar[int]
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    WHY_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    record: int
    reply: int
    player: int
    seat: int
    request: str
    source: _game_log_pb2.DecisionSource
    verdict: ServerVerdict
    code: str
    why: str
    event: int
    def __init__(self, record: _Optional[int] = ..., reply: _Optional[int] = ..., player: _Optional[int] = ..., seat: _Optional[int] = ..., request: _Optional[str] = ..., source: _Optional[_Union[_game_log_pb2.DecisionSource, str]] = ..., verdict: _Optional[_Union[ServerVerdict, str]] = ..., code: _Optional[str] = ..., why: _Optional[str] = ..., event: _Optional[int] = ...) -> None: ...

class Coverage(_message.Message):
    __slots__ = ("client_replies", "judged_by_both", "judged_by_engine_only", "judged_by_server_only", "judged_by_neither", "why_unjudged")
    CLIENT_REPLIES_FIELD_NUMBER: _ClassVar[int]
    JUDGED_BY_BOTH_FIELD_NUMBER: _ClassVar[int]
    JUDGED_BY_ENGINE_ONLY_FIELD_NUMBER: _ClassVar[int]
    JUDGED_BY_SERVER_ONLY_FIELD_NUMBER: _ClassVar[int]
    JUDGED_BY_NEITHER_FIELD_NUMBER: _ClassVar[int]
    WHY_UNJUDGED_FIELD_NUMBER: _ClassVar[int]
    client_replies: int
    judged_by_both: int
    judged_by_engine_only: int
    judged_by_server_only: int
    judged_by_neither: int
    why_unjudged: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, client_replies: _Optional[int] = ..., judged_by_both: _Optional[int] = ..., judged_by_engine_only: _Optional[int] = ..., judged_by_server_only: _Optional[int] = ..., judged_by_neither: _Optional[int] = ..., why_unjudged: _Optional[_Iterable[str]] = ...) -> None: ...

class Disagreement(_message.Message):
    __slots__ = ("reply", "event", "player", "seat", "engine_codes", "server_verdict", "server_code", "server_why")
    REPLY_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    ENGINE_CODES_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERDICT_FIELD_NUMBER: _ClassVar[int]
    SERVER_CODE_FIELD_NUMBER: _ClassVar[int]
    SERVER_WHY_FIELD_NUMBER: _ClassVar[int]
    reply: int
    event: int
    player: int
    seat: int
    engine_codes: _containers.RepeatedScalarFieldContainer[str]
    server_verdict: ServerVerdict
    server_code: str
    server_why: str
    def __init__(self, reply: _Optional[int] = ..., event: _Optional[int] = ..., player: _Optional[int] = ..., seat: _Optional[int] = ..., engine_codes: _Optional[_Iterable[str]] = ..., server_verdict: _Optional[_Union[ServerVerdict, str]] = ..., server_code: _Optional[str] = ..., server_why: _Optional[str] = ...) -> None: ...

class HeaderNotice(_message.Message):
    __slots__ = ("code", "message", "rule")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    rule: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., rule: _Optional[str] = ...) -> None: ...
