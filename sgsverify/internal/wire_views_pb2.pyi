from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Field1(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, items: _Optional[_Iterable[bytes]] = ...) -> None: ...

class Field2(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, items: _Optional[_Iterable[bytes]] = ...) -> None: ...

class Field3(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, items: _Optional[_Iterable[bytes]] = ...) -> None: ...

class AnnotationsSansDigest(_message.Message):
    __slots__ = ("annotations",)
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    annotations: _containers.RepeatedCompositeFieldContainer[AnnotationSansDigest]
    def __init__(self, annotations: _Optional[_Iterable[_Union[AnnotationSansDigest, _Mapping]]] = ...) -> None: ...

class AnnotationSansDigest(_message.Message):
    __slots__ = ("index", "derived", "event", "status", "violations", "applied", "source")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    DERIVED_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    index: int
    derived: bool
    event: bytes
    status: int
    violations: _containers.RepeatedScalarFieldContainer[bytes]
    applied: bool
    source: int
    def __init__(self, index: _Optional[int] = ..., derived: _Optional[bool] = ..., event: _Optional[bytes] = ..., status: _Optional[int] = ..., violations: _Optional[_Iterable[bytes]] = ..., applied: _Optional[bool] = ..., source: _Optional[int] = ...) -> None: ...
