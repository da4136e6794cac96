"""The replay store: SQLAlchemy 2 models, Alembic migrations, and the Store that saves and
finds annotated replays. SQLite by default, PostgreSQL by URL. Knows nothing of gRPC."""

from storage.store import (
    InvalidQuery,
    InvalidRecord,
    NewReplay,
    Page,
    ReplayFilter,
    ReplayNotFound,
    ReplaySummary,
    SchemaOutOfDate,
    SeatFacts,
    StorageError,
    StorageUnavailable,
    Store,
    StoredReplay,
    SubmissionMetadata,
    VerdictFacts,
    ViolationFacts,
)

__all__ = [
    "InvalidQuery", "InvalidRecord", "NewReplay", "Page", "ReplayFilter", "ReplayNotFound", "ReplaySummary",
    "SchemaOutOfDate", "SeatFacts", "StorageError", "StorageUnavailable", "Store", "StoredReplay", "SubmissionMetadata",
    "VerdictFacts", "ViolationFacts",
]
