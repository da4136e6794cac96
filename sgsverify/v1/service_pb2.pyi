import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from sgsverify.v1 import annotation_pb2 as _annotation_pb2
from sgsverify.v1 import game_log_pb2 as _game_log_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SubmissionMetadata(_message.Message):
    __slots__ = ("tournament", "round", "table", "submitter")
    TOURNAMENT_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    SUBMITTER_FIELD_NUMBER: _ClassVar[int]
    tournament: str
    round: str
    table: str
    submitter: str
    def __init__(self, tournament: _Optional[str] = ..., round: _Optional[str] = ..., table: _Optional[str] = ..., submitter: _Optional[str] = ...) -> None: ...

class ReplayInfo(_message.Message):
    __slots__ = ("id", "log_sha256", "metadata", "submitted_at", "ruleset", "mode", "seed", "recorder", "seats", "event_count", "log_size", "engine_version", "violation_count", "violation_codes", "followed", "result", "tenant", "judged_by")
    ID_FIELD_NUMBER: _ClassVar[int]
    LOG_SHA256_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_AT_FIELD_NUMBER: _ClassVar[int]
    RULESET_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    RECORDER_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    EVENT_COUNT_FIELD_NUMBER: _ClassVar[int]
    LOG_SIZE_FIELD_NUMBER: _ClassVar[int]
    ENGINE_VERSION_FIELD_NUMBER: _ClassVar[int]
    VIOLATION_COUNT_FIELD_NUMBER: _ClassVar[int]
    VIOLATION_CODES_FIELD_NUMBER: _ClassVar[int]
    FOLLOWED_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    JUDGED_BY_FIELD_NUMBER: _ClassVar[int]
    id: str
    log_sha256: str
    metadata: SubmissionMetadata
    submitted_at: _timestamp_pb2.Timestamp
    ruleset: str
    mode: _game_log_pb2.Mode
    seed: int
    recorder: str
    seats: _containers.RepeatedCompositeFieldContainer[_game_log_pb2.Seat]
    event_count: int
    log_size: int
    engine_version: str
    violation_count: int
    violation_codes: _containers.RepeatedScalarFieldContainer[str]
    followed: bool
    result: _annotation_pb2.GameResult
    tenant: str
    judged_by: str
    def __init__(self, id: _Optional[str] = ..., log_sha256: _Optional[str] = ..., metadata: _Optional[_Union[SubmissionMetadata, _Mapping]] = ..., submitted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ruleset: _Optional[str] = ..., mode: _Optional[_Union[_game_log_pb2.Mode, str]] = ..., seed: _Optional[int] = ..., recorder: _Optional[str] = ..., seats: _Optional[_Iterable[_Union[_game_log_pb2.Seat, _Mapping]]] = ..., event_count: _Optional[int] = ..., log_size: _Optional[int] = ..., engine_version: _Optional[str] = ..., violation_count: _Optional[int] = ..., violation_codes: _Optional[_Iterable[str]] = ..., followed: _Optional[bool] = ..., result: _Optional[_Union[_annotation_pb2.GameResult, _Mapping]] = ..., tenant: _Optional[str] = ..., judged_by: _Optional[str] = ...) -> None: ...

class ForeignLog(_message.Message):
    __slots__ = ("engine", "data", "name")
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    engine: str
    data: bytes
    name: str
    def __init__(self, engine: _Optional[str] = ..., data: _Optional[bytes] = ..., name: _Optional[str] = ...) -> None: ...

class VerifyLogRequest(_message.Message):
    __slots__ = ("log", "encoded_log", "foreign_log", "metadata", "summary_only")
    LOG_FIELD_NUMBER: _ClassVar[int]
    ENCODED_LOG_FIELD_NUMBER: _ClassVar[int]
    FOREIGN_LOG_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_ONLY_FIELD_NUMBER: _ClassVar[int]
    log: _game_log_pb2.GameLog
    encoded_log: bytes
    foreign_log: ForeignLog
    metadata: SubmissionMetadata
    summary_only: bool
    def __init__(self, log: _Optional[_Union[_game_log_pb2.GameLog, _Mapping]] = ..., encoded_log: _Optional[bytes] = ..., foreign_log: _Optional[_Union[ForeignLog, _Mapping]] = ..., metadata: _Optional[_Union[SubmissionMetadata, _Mapping]] = ..., summary_only: _Optional[bool] = ...) -> None: ...

class VerifyLogResponse(_message.Message):
    __slots__ = ("info", "created", "replay")
    INFO_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    REPLAY_FIELD_NUMBER: _ClassVar[int]
    info: ReplayInfo
    created: bool
    replay: _annotation_pb2.AnnotatedReplay
    def __init__(self, info: _Optional[_Union[ReplayInfo, _Mapping]] = ..., created: _Optional[bool] = ..., replay: _Optional[_Union[_annotation_pb2.AnnotatedReplay, _Mapping]] = ...) -> None: ...

class UploadLogRequest(_message.Message):
    __slots__ = ("header", "metadata", "events", "summary_only", "foreign")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_ONLY_FIELD_NUMBER: _ClassVar[int]
    FOREIGN_FIELD_NUMBER: _ClassVar[int]
    header: _game_log_pb2.GameHeader
    metadata: SubmissionMetadata
    events: _containers.RepeatedCompositeFieldContainer[_game_log_pb2.Event]
    summary_only: bool
    foreign: ForeignLog
    def __init__(self, header: _Optional[_Union[_game_log_pb2.GameHeader, _Mapping]] = ..., metadata: _Optional[_Union[SubmissionMetadata, _Mapping]] = ..., events: _Optional[_Iterable[_Union[_game_log_pb2.Event, _Mapping]]] = ..., summary_only: _Optional[bool] = ..., foreign: _Optional[_Union[ForeignLog, _Mapping]] = ...) -> None: ...

class VerifyLiveRequest(_message.Message):
    __slots__ = ("header", "metadata", "events", "discard", "server")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    DISCARD_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    header: _game_log_pb2.GameHeader
    metadata: SubmissionMetadata
    events: _containers.RepeatedCompositeFieldContainer[_game_log_pb2.Event]
    discard: bool
    server: ServerVerdicts
    def __init__(self, header: _Optional[_Union[_game_log_pb2.GameHeader, _Mapping]] = ..., metadata: _Optional[_Union[SubmissionMetadata, _Mapping]] = ..., events: _Optional[_Iterable[_Union[_game_log_pb2.Event, _Mapping]]] = ..., discard: _Optional[bool] = ..., server: _Optional[_Union[ServerVerdicts, _Mapping]] = ...) -> None: ...

class ServerVerdicts(_message.Message):
    __slots__ = ("judge", "checks", "client_replies", "reply_events")
    JUDGE_FIELD_NUMBER: _ClassVar[int]
    CHECKS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_REPLIES_FIELD_NUMBER: _ClassVar[int]
    REPLY_EVENTS_FIELD_NUMBER: _ClassVar[int]
    judge: str
    checks: _containers.RepeatedCompositeFieldContainer[_annotation_pb2.ServerCheck]
    client_replies: _containers.RepeatedScalarFieldContainer[int]
    reply_events: _containers.RepeatedCompositeFieldContainer[ReplyEvent]
    def __init__(self, judge: _Optional[str] = ..., checks: _Optional[_Iterable[_Union[_annotation_pb2.ServerCheck, _Mapping]]] = ..., client_replies: _Optional[_Iterable[int]] = ..., reply_events: _Optional[_Iterable[_Union[ReplyEvent, _Mapping]]] = ...) -> None: ...

class ReplyEvent(_message.Message):
    __slots__ = ("reply", "event")
    REPLY_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    reply: int
    event: int
    def __init__(self, reply: _Optional[int] = ..., event: _Optional[int] = ...) -> None: ...

class VerifyLiveResponse(_message.Message):
    __slots__ = ("annotations", "events_received", "game_over", "finished", "stopped")
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    GAME_OVER_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    STOPPED_FIELD_NUMBER: _ClassVar[int]
    annotations: _containers.RepeatedCompositeFieldContainer[_annotation_pb2.Annotation]
    events_received: int
    game_over: bool
    finished: LiveFinished
    stopped: LiveStopped
    def __init__(self, annotations: _Optional[_Iterable[_Union[_annotation_pb2.Annotation, _Mapping]]] = ..., events_received: _Optional[int] = ..., game_over: _Optional[bool] = ..., finished: _Optional[_Union[LiveFinished, _Mapping]] = ..., stopped: _Optional[_Union[LiveStopped, _Mapping]] = ...) -> None: ...

class LiveStopped(_message.Message):
    __slots__ = ("event", "reason")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    event: int
    reason: str
    def __init__(self, event: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class LiveFinished(_message.Message):
    __slots__ = ("info", "stored", "created", "annotation_count")
    INFO_FIELD_NUMBER: _ClassVar[int]
    STORED_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    ANNOTATION_COUNT_FIELD_NUMBER: _ClassVar[int]
    info: ReplayInfo
    stored: bool
    created: bool
    annotation_count: int
    def __init__(self, info: _Optional[_Union[ReplayInfo, _Mapping]] = ..., stored: _Optional[bool] = ..., created: _Optional[bool] = ..., annotation_count: _Optional[int] = ...) -> None: ...

class GetReplayRequest(_message.Message):
    __slots__ = ("id", "include_log", "include_original", "run")
    ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_LOG_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_ORIGINAL_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    id: str
    include_log: bool
    include_original: bool
    run: str
    def __init__(self, id: _Optional[str] = ..., include_log: _Optional[bool] = ..., include_original: _Optional[bool] = ..., run: _Optional[str] = ...) -> None: ...

class GetReplayResponse(_message.Message):
    __slots__ = ("info", "replay", "log", "original")
    INFO_FIELD_NUMBER: _ClassVar[int]
    REPLAY_FIELD_NUMBER: _ClassVar[int]
    LOG_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_FIELD_NUMBER: _ClassVar[int]
    info: ReplayInfo
    replay: _annotation_pb2.AnnotatedReplay
    log: _game_log_pb2.GameLog
    original: bytes
    def __init__(self, info: _Optional[_Union[ReplayInfo, _Mapping]] = ..., replay: _Optional[_Union[_annotation_pb2.AnnotatedReplay, _Mapping]] = ..., log: _Optional[_Union[_game_log_pb2.GameLog, _Mapping]] = ..., original: _Optional[bytes] = ...) -> None: ...

class ListReplaysRequest(_message.Message):
    __slots__ = ("tournament", "round", "table", "submitter", "player", "has_violations", "violation_code", "submitted_after", "submitted_before", "page_size", "page_token", "tenant", "violation_source", "judged_by")
    TOURNAMENT_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    SUBMITTER_FIELD_NUMBER: _ClassVar[int]
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    HAS_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    VIOLATION_CODE_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_AFTER_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    VIOLATION_SOURCE_FIELD_NUMBER: _ClassVar[int]
    JUDGED_BY_FIELD_NUMBER: _ClassVar[int]
    tournament: str
    round: str
    table: str
    submitter: str
    player: str
    has_violations: bool
    violation_code: str
    submitted_after: _timestamp_pb2.Timestamp
    submitted_before: _timestamp_pb2.Timestamp
    page_size: int
    page_token: str
    tenant: str
    violation_source: _game_log_pb2.DecisionSource
    judged_by: str
    def __init__(self, tournament: _Optional[str] = ..., round: _Optional[str] = ..., table: _Optional[str] = ..., submitter: _Optional[str] = ..., player: _Optional[str] = ..., has_violations: _Optional[bool] = ..., violation_code: _Optional[str] = ..., submitted_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., submitted_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., tenant: _Optional[str] = ..., violation_source: _Optional[_Union[_game_log_pb2.DecisionSource, str]] = ..., judged_by: _Optional[str] = ...) -> None: ...

class ListReplaysResponse(_message.Message):
    __slots__ = ("replays", "next_page_token", "total_count")
    REPLAYS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
    replays: _containers.RepeatedCompositeFieldContainer[ReplayInfo]
    next_page_token: str
    total_count: int
    def __init__(self, replays: _Optional[_Iterable[_Union[ReplayInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_count: _Optional[int] = ...) -> None: ...

class DeleteReplayRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class DeleteReplayResponse(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class RegressRequest(_message.Message):
    __slots__ = ("filter", "run", "against", "restart")
    FILTER_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    AGAINST_FIELD_NUMBER: _ClassVar[int]
    RESTART_FIELD_NUMBER: _ClassVar[int]
    filter: ListReplaysRequest
    run: str
    against: str
    restart: bool
    def __init__(self, filter: _Optional[_Union[ListReplaysRequest, _Mapping]] = ..., run: _Optional[str] = ..., against: _Optional[str] = ..., restart: _Optional[bool] = ...) -> None: ...

class RegressResponse(_message.Message):
    __slots__ = ("progress", "change", "summary")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    progress: RegressProgress
    change: ReplayChange
    summary: RegressSummary
    def __init__(self, progress: _Optional[_Union[RegressProgress, _Mapping]] = ..., change: _Optional[_Union[ReplayChange, _Mapping]] = ..., summary: _Optional[_Union[RegressSummary, _Mapping]] = ...) -> None: ...

class RegressProgress(_message.Message):
    __slots__ = ("done", "total")
    DONE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    done: int
    total: int
    def __init__(self, done: _Optional[int] = ..., total: _Optional[int] = ...) -> None: ...

class ViolationChange(_message.Message):
    __slots__ = ("index", "derived", "code", "header")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    DERIVED_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    index: int
    derived: bool
    code: str
    header: bool
    def __init__(self, index: _Optional[int] = ..., derived: _Optional[bool] = ..., code: _Optional[str] = ..., header: _Optional[bool] = ...) -> None: ...

class AnnotationChange(_message.Message):
    __slots__ = ("index", "derived", "stored", "now")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    DERIVED_FIELD_NUMBER: _ClassVar[int]
    STORED_FIELD_NUMBER: _ClassVar[int]
    NOW_FIELD_NUMBER: _ClassVar[int]
    index: int
    derived: bool
    stored: str
    now: str
    def __init__(self, index: _Optional[int] = ..., derived: _Optional[bool] = ..., stored: _Optional[str] = ..., now: _Optional[str] = ...) -> None: ...

class ReplayChange(_message.Message):
    __slots__ = ("replay_id", "new_violations", "vanished_violations", "status_changes", "diverged", "first_divergent_index", "first_divergent_derived", "stored_digest", "new_digest", "stored_result", "new_result", "winner_changed", "error", "stored_engine_version", "new_engine_version")
    REPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    NEW_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    VANISHED_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    STATUS_CHANGES_FIELD_NUMBER: _ClassVar[int]
    DIVERGED_FIELD_NUMBER: _ClassVar[int]
    FIRST_DIVERGENT_INDEX_FIELD_NUMBER: _ClassVar[int]
    FIRST_DIVERGENT_DERIVED_FIELD_NUMBER: _ClassVar[int]
    STORED_DIGEST_FIELD_NUMBER: _ClassVar[int]
    NEW_DIGEST_FIELD_NUMBER: _ClassVar[int]
    STORED_RESULT_FIELD_NUMBER: _ClassVar[int]
    NEW_RESULT_FIELD_NUMBER: _ClassVar[int]
    WINNER_CHANGED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STORED_ENGINE_VERSION_FIELD_NUMBER: _ClassVar[int]
    NEW_ENGINE_VERSION_FIELD_NUMBER: _ClassVar[int]
    replay_id: str
    new_violations: _containers.RepeatedCompositeFieldContainer[ViolationChange]
    vanished_violations: _containers.RepeatedCompositeFieldContainer[ViolationChange]
    status_changes: _containers.RepeatedCompositeFieldContainer[AnnotationChange]
    diverged: bool
    first_divergent_index: int
    first_divergent_derived: bool
    stored_digest: bytes
    new_digest: bytes
    stored_result: str
    new_result: str
    winner_changed: bool
    error: str
    stored_engine_version: str
    new_engine_version: str
    def __init__(self, replay_id: _Optional[str] = ..., new_violations: _Optional[_Iterable[_Union[ViolationChange, _Mapping]]] = ..., vanished_violations: _Optional[_Iterable[_Union[ViolationChange, _Mapping]]] = ..., status_changes: _Optional[_Iterable[_Union[AnnotationChange, _Mapping]]] = ..., diverged: _Optional[bool] = ..., first_divergent_index: _Optional[int] = ..., first_divergent_derived: _Optional[bool] = ..., stored_digest: _Optional[bytes] = ..., new_digest: _Optional[bytes] = ..., stored_result: _Optional[str] = ..., new_result: _Optional[str] = ..., winner_changed: _Optional[bool] = ..., error: _Optional[str] = ..., stored_engine_version: _Optional[str] = ..., new_engine_version: _Optional[str] = ...) -> None: ...

class RegressSummary(_message.Message):
    __slots__ = ("engine_version", "replays", "resumed", "verified", "unchanged", "changed", "failed", "seconds")
    ENGINE_VERSION_FIELD_NUMBER: _ClassVar[int]
    REPLAYS_FIELD_NUMBER: _ClassVar[int]
    RESUMED_FIELD_NUMBER: _ClassVar[int]
    VERIFIED_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    engine_version: str
    replays: int
    resumed: int
    verified: int
    unchanged: int
    changed: int
    failed: int
    seconds: float
    def __init__(self, engine_version: _Optional[str] = ..., replays: _Optional[int] = ..., resumed: _Optional[int] = ..., verified: _Optional[int] = ..., unchanged: _Optional[int] = ..., changed: _Optional[int] = ..., failed: _Optional[int] = ..., seconds: _Optional[float] = ...) -> None: ...

class ListRunsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RunInfo(_message.Message):
    __slots__ = ("name", "replays", "engine_versions", "started", "finished")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REPLAYS_FIELD_NUMBER: _ClassVar[int]
    ENGINE_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    name: str
    replays: int
    engine_versions: _containers.RepeatedScalarFieldContainer[str]
    started: _timestamp_pb2.Timestamp
    finished: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., replays: _Optional[int] = ..., engine_versions: _Optional[_Iterable[str]] = ..., started: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListRunsResponse(_message.Message):
    __slots__ = ("runs",)
    RUNS_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[RunInfo]
    def __init__(self, runs: _Optional[_Iterable[_Union[RunInfo, _Mapping]]] = ...) -> None: ...

class GetStandingsRequest(_message.Message):
    __slots__ = ("tournament", "tenant", "exclude_violations")
    TOURNAMENT_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    tournament: str
    tenant: str
    exclude_violations: bool
    def __init__(self, tournament: _Optional[str] = ..., tenant: _Optional[str] = ..., exclude_violations: _Optional[bool] = ...) -> None: ...

class PlayerStanding(_message.Message):
    __slots__ = ("rank", "player", "total", "games", "wins", "lord_games", "games_with_violations")
    RANK_FIELD_NUMBER: _ClassVar[int]
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    WINS_FIELD_NUMBER: _ClassVar[int]
    LORD_GAMES_FIELD_NUMBER: _ClassVar[int]
    GAMES_WITH_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    rank: int
    player: str
    total: int
    games: int
    wins: int
    lord_games: int
    games_with_violations: int
    def __init__(self, rank: _Optional[int] = ..., player: _Optional[str] = ..., total: _Optional[int] = ..., games: _Optional[int] = ..., wins: _Optional[int] = ..., lord_games: _Optional[int] = ..., games_with_violations: _Optional[int] = ...) -> None: ...

class StandingSeat(_message.Message):
    __slots__ = ("seat", "player", "role", "score", "winner")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    WINNER_FIELD_NUMBER: _ClassVar[int]
    seat: int
    player: str
    role: _game_log_pb2.Role
    score: int
    winner: bool
    def __init__(self, seat: _Optional[int] = ..., player: _Optional[str] = ..., role: _Optional[_Union[_game_log_pb2.Role, str]] = ..., score: _Optional[int] = ..., winner: _Optional[bool] = ...) -> None: ...

class StandingGame(_message.Message):
    __slots__ = ("replay_id", "round", "table", "submitted_at", "violation_count", "violation_codes", "scored", "counted", "note", "side", "seats")
    REPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_AT_FIELD_NUMBER: _ClassVar[int]
    VIOLATION_COUNT_FIELD_NUMBER: _ClassVar[int]
    VIOLATION_CODES_FIELD_NUMBER: _ClassVar[int]
    SCORED_FIELD_NUMBER: _ClassVar[int]
    COUNTED_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    SIDE_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    replay_id: str
    round: str
    table: str
    submitted_at: _timestamp_pb2.Timestamp
    violation_count: int
    violation_codes: _containers.RepeatedScalarFieldContainer[str]
    scored: bool
    counted: bool
    note: str
    side: _game_log_pb2.Side
    seats: _containers.RepeatedCompositeFieldContainer[StandingSeat]
    def __init__(self, replay_id: _Optional[str] = ..., round: _Optional[str] = ..., table: _Optional[str] = ..., submitted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., violation_count: _Optional[int] = ..., violation_codes: _Optional[_Iterable[str]] = ..., scored: _Optional[bool] = ..., counted: _Optional[bool] = ..., note: _Optional[str] = ..., side: _Optional[_Union[_game_log_pb2.Side, str]] = ..., seats: _Optional[_Iterable[_Union[StandingSeat, _Mapping]]] = ...) -> None: ...

class GetStandingsResponse(_message.Message):
    __slots__ = ("tournament", "players", "games", "never_lord", "unnamed_seats")
    TOURNAMENT_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    NEVER_LORD_FIELD_NUMBER: _ClassVar[int]
    UNNAMED_SEATS_FIELD_NUMBER: _ClassVar[int]
    tournament: str
    players: _containers.RepeatedCompositeFieldContainer[PlayerStanding]
    games: _containers.RepeatedCompositeFieldContainer[StandingGame]
    never_lord: _containers.RepeatedScalarFieldContainer[str]
    unnamed_seats: int
    def __init__(self, tournament: _Optional[str] = ..., players: _Optional[_Iterable[_Union[PlayerStanding, _Mapping]]] = ..., games: _Optional[_Iterable[_Union[StandingGame, _Mapping]]] = ..., never_lord: _Optional[_Iterable[str]] = ..., unnamed_seats: _Optional[int] = ...) -> None: ...
