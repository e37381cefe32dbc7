from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Param(_message.Message):
    __slots__ = ("int_value", "float_value", "string_value", "bool_value")
    INT_VALUE_FIELD_NUMBER: _ClassVar[int]
    FLOAT_VALUE_FIELD_NUMBER: _ClassVar[int]
    STRING_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    int_value: int
    float_value: float
    string_value: str
    bool_value: bool
    def __init__(self, int_value: _Optional[int] = ..., float_value: _Optional[float] = ..., string_value: _Optional[str] = ..., bool_value: _Optional[bool] = ...) -> None: ...

class Component(_message.Message):
    __slots__ = ("name", "params")
    class ParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Param
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Param, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    name: str
    params: _containers.MessageMap[str, Param]
    def __init__(self, name: _Optional[str] = ..., params: _Optional[_Mapping[str, Param]] = ...) -> None: ...

class Dimension(_message.Message):
    __slots__ = ("name", "monoid")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MONOID_FIELD_NUMBER: _ClassVar[int]
    name: str
    monoid: Component
    def __init__(self, name: _Optional[str] = ..., monoid: _Optional[_Union[Component, _Mapping]] = ...) -> None: ...

class StoreOptions(_message.Message):
    __slots__ = ("buffer_size", "cache_size", "block_size")
    BUFFER_SIZE_FIELD_NUMBER: _ClassVar[int]
    CACHE_SIZE_FIELD_NUMBER: _ClassVar[int]
    BLOCK_SIZE_FIELD_NUMBER: _ClassVar[int]
    buffer_size: int
    cache_size: int
    block_size: int
    def __init__(self, buffer_size: _Optional[int] = ..., cache_size: _Optional[int] = ..., block_size: _Optional[int] = ...) -> None: ...

class WindowSpec(_message.Message):
    __slots__ = ("name", "monoid", "dimensions", "policy", "algorithm", "store", "keyed", "late")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MONOID_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    KEYED_FIELD_NUMBER: _ClassVar[int]
    LATE_FIELD_NUMBER: _ClassVar[int]
    name: str
    monoid: Component
    dimensions: _containers.RepeatedCompositeFieldContainer[Dimension]
    policy: Component
    algorithm: str
    store: StoreOptions
    keyed: bool
    late: str
    def __init__(self, name: _Optional[str] = ..., monoid: _Optional[_Union[Component, _Mapping]] = ..., dimensions: _Optional[_Iterable[_Union[Dimension, _Mapping]]] = ..., policy: _Optional[_Union[Component, _Mapping]] = ..., algorithm: _Optional[str] = ..., store: _Optional[_Union[StoreOptions, _Mapping]] = ..., keyed: _Optional[bool] = ..., late: _Optional[str] = ...) -> None: ...

class WindowInfo(_message.Message):
    __slots__ = ("spec", "length", "keys")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    spec: WindowSpec
    length: int
    keys: int
    def __init__(self, spec: _Optional[_Union[WindowSpec, _Mapping]] = ..., length: _Optional[int] = ..., keys: _Optional[int] = ...) -> None: ...

class Update(_message.Message):
    __slots__ = ("ts", "ts_float", "key", "value", "dimensions", "payload")
    class DimensionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    TS_FIELD_NUMBER: _ClassVar[int]
    TS_FLOAT_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    ts: int
    ts_float: float
    key: str
    value: float
    dimensions: _containers.ScalarMap[str, float]
    payload: bytes
    def __init__(self, ts: _Optional[int] = ..., ts_float: _Optional[float] = ..., key: _Optional[str] = ..., value: _Optional[float] = ..., dimensions: _Optional[_Mapping[str, float]] = ..., payload: _Optional[bytes] = ...) -> None: ...

class Result(_message.Message):
    __slots__ = ("window", "key", "length", "values", "payload")
    class ValuesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    window: str
    key: str
    length: int
    values: _containers.ScalarMap[str, float]
    payload: bytes
    def __init__(self, window: _Optional[str] = ..., key: _Optional[str] = ..., length: _Optional[int] = ..., values: _Optional[_Mapping[str, float]] = ..., payload: _Optional[bytes] = ...) -> None: ...

class CreateWindowRequest(_message.Message):
    __slots__ = ("spec", "if_not_exists")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    IF_NOT_EXISTS_FIELD_NUMBER: _ClassVar[int]
    spec: WindowSpec
    if_not_exists: bool
    def __init__(self, spec: _Optional[_Union[WindowSpec, _Mapping]] = ..., if_not_exists: _Optional[bool] = ...) -> None: ...

class GetWindowRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListWindowsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListWindowsResponse(_message.Message):
    __slots__ = ("windows",)
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    windows: _containers.RepeatedCompositeFieldContainer[WindowInfo]
    def __init__(self, windows: _Optional[_Iterable[_Union[WindowInfo, _Mapping]]] = ...) -> None: ...

class DeleteWindowRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteWindowResponse(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    def __init__(self, deleted: _Optional[bool] = ...) -> None: ...

class Doubles(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, values: _Optional[_Iterable[float]] = ...) -> None: ...

class Columns(_message.Message):
    __slots__ = ("ts", "ts_float", "values", "dimensions", "payloads", "keys")
    class DimensionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Doubles
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Doubles, _Mapping]] = ...) -> None: ...
    TS_FIELD_NUMBER: _ClassVar[int]
    TS_FLOAT_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    PAYLOADS_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    ts: _containers.RepeatedScalarFieldContainer[int]
    ts_float: _containers.RepeatedScalarFieldContainer[float]
    values: _containers.RepeatedScalarFieldContainer[float]
    dimensions: _containers.MessageMap[str, Doubles]
    payloads: _containers.RepeatedScalarFieldContainer[bytes]
    keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ts: _Optional[_Iterable[int]] = ..., ts_float: _Optional[_Iterable[float]] = ..., values: _Optional[_Iterable[float]] = ..., dimensions: _Optional[_Mapping[str, Doubles]] = ..., payloads: _Optional[_Iterable[bytes]] = ..., keys: _Optional[_Iterable[str]] = ...) -> None: ...

class InsertRequest(_message.Message):
    __slots__ = ("window", "updates", "columns", "batch_id", "want_result")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    UPDATES_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    WANT_RESULT_FIELD_NUMBER: _ClassVar[int]
    window: str
    updates: _containers.RepeatedCompositeFieldContainer[Update]
    columns: Columns
    batch_id: str
    want_result: bool
    def __init__(self, window: _Optional[str] = ..., updates: _Optional[_Iterable[_Union[Update, _Mapping]]] = ..., columns: _Optional[_Union[Columns, _Mapping]] = ..., batch_id: _Optional[str] = ..., want_result: _Optional[bool] = ...) -> None: ...

class InsertResponse(_message.Message):
    __slots__ = ("batch_id", "inserted", "evicted", "duplicate", "results")
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    INSERTED_FIELD_NUMBER: _ClassVar[int]
    EVICTED_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    inserted: int
    evicted: int
    duplicate: bool
    results: _containers.RepeatedCompositeFieldContainer[Result]
    def __init__(self, batch_id: _Optional[str] = ..., inserted: _Optional[int] = ..., evicted: _Optional[int] = ..., duplicate: _Optional[bool] = ..., results: _Optional[_Iterable[_Union[Result, _Mapping]]] = ...) -> None: ...

class TimeInterval(_message.Message):
    __slots__ = ("from_ts", "from_ts_float", "to_ts", "to_ts_float")
    FROM_TS_FIELD_NUMBER: _ClassVar[int]
    FROM_TS_FLOAT_FIELD_NUMBER: _ClassVar[int]
    TO_TS_FIELD_NUMBER: _ClassVar[int]
    TO_TS_FLOAT_FIELD_NUMBER: _ClassVar[int]
    from_ts: int
    from_ts_float: float
    to_ts: int
    to_ts_float: float
    def __init__(self, from_ts: _Optional[int] = ..., from_ts_float: _Optional[float] = ..., to_ts: _Optional[int] = ..., to_ts_float: _Optional[float] = ...) -> None: ...

class QueryRequest(_message.Message):
    __slots__ = ("windows", "keys", "range")
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    windows: _containers.RepeatedScalarFieldContainer[str]
    keys: _containers.RepeatedScalarFieldContainer[str]
    range: TimeInterval
    def __init__(self, windows: _Optional[_Iterable[str]] = ..., keys: _Optional[_Iterable[str]] = ..., range: _Optional[_Union[TimeInterval, _Mapping]] = ...) -> None: ...

class QueryResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[Result]
    def __init__(self, results: _Optional[_Iterable[_Union[Result, _Mapping]]] = ...) -> None: ...

class EvictRequest(_message.Message):
    __slots__ = ("window", "key", "count")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    window: str
    key: str
    count: int
    def __init__(self, window: _Optional[str] = ..., key: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class EvictResponse(_message.Message):
    __slots__ = ("evicted",)
    EVICTED_FIELD_NUMBER: _ClassVar[int]
    evicted: int
    def __init__(self, evicted: _Optional[int] = ...) -> None: ...

class RetractRequest(_message.Message):
    __slots__ = ("window", "key", "ts", "ts_float")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    TS_FIELD_NUMBER: _ClassVar[int]
    TS_FLOAT_FIELD_NUMBER: _ClassVar[int]
    window: str
    key: str
    ts: int
    ts_float: float
    def __init__(self, window: _Optional[str] = ..., key: _Optional[str] = ..., ts: _Optional[int] = ..., ts_float: _Optional[float] = ...) -> None: ...

class RetractResponse(_message.Message):
    __slots__ = ("retracted",)
    RETRACTED_FIELD_NUMBER: _ClassVar[int]
    retracted: int
    def __init__(self, retracted: _Optional[int] = ...) -> None: ...

class FlushRequest(_message.Message):
    __slots__ = ("windows",)
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    windows: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, windows: _Optional[_Iterable[str]] = ...) -> None: ...

class FlushResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ("window", "keys")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    window: str
    keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, window: _Optional[str] = ..., keys: _Optional[_Iterable[str]] = ...) -> None: ...

class DescribeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ParamInfo(_message.Message):
    __slots__ = ("name", "type", "required", "default_value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    required: bool
    default_value: Param
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., required: _Optional[bool] = ..., default_value: _Optional[_Union[Param, _Mapping]] = ...) -> None: ...

class ComponentInfo(_message.Message):
    __slots__ = ("name", "description", "params", "uses_timestamps")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    USES_TIMESTAMPS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    params: _containers.RepeatedCompositeFieldContainer[ParamInfo]
    uses_timestamps: bool
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., params: _Optional[_Iterable[_Union[ParamInfo, _Mapping]]] = ..., uses_timestamps: _Optional[bool] = ...) -> None: ...

class AlgorithmInfo(_message.Message):
    __slots__ = ("name", "description", "is_default")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    IS_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    is_default: bool
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., is_default: _Optional[bool] = ...) -> None: ...

class DescribeResponse(_message.Message):
    __slots__ = ("monoids", "policies", "algorithms", "predicates")
    MONOIDS_FIELD_NUMBER: _ClassVar[int]
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    ALGORITHMS_FIELD_NUMBER: _ClassVar[int]
    PREDICATES_FIELD_NUMBER: _ClassVar[int]
    monoids: _containers.RepeatedCompositeFieldContainer[ComponentInfo]
    policies: _containers.RepeatedCompositeFieldContainer[ComponentInfo]
    algorithms: _containers.RepeatedCompositeFieldContainer[AlgorithmInfo]
    predicates: _containers.RepeatedCompositeFieldContainer[ComponentInfo]
    def __init__(self, monoids: _Optional[_Iterable[_Union[ComponentInfo, _Mapping]]] = ..., policies: _Optional[_Iterable[_Union[ComponentInfo, _Mapping]]] = ..., algorithms: _Optional[_Iterable[_Union[AlgorithmInfo, _Mapping]]] = ..., predicates: _Optional[_Iterable[_Union[ComponentInfo, _Mapping]]] = ...) -> None: ...

class TumblingWindow(_message.Message):
    __slots__ = ("size", "offset")
    SIZE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    size: float
    offset: float
    def __init__(self, size: _Optional[float] = ..., offset: _Optional[float] = ...) -> None: ...

class SlidingWindow(_message.Message):
    __slots__ = ("size", "slide", "offset")
    SIZE_FIELD_NUMBER: _ClassVar[int]
    SLIDE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    size: float
    slide: float
    offset: float
    def __init__(self, size: _Optional[float] = ..., slide: _Optional[float] = ..., offset: _Optional[float] = ...) -> None: ...

class SessionWindow(_message.Message):
    __slots__ = ("gap",)
    GAP_FIELD_NUMBER: _ClassVar[int]
    gap: float
    def __init__(self, gap: _Optional[float] = ...) -> None: ...

class CountWindow(_message.Message):
    __slots__ = ("size", "slide", "every")
    SIZE_FIELD_NUMBER: _ClassVar[int]
    SLIDE_FIELD_NUMBER: _ClassVar[int]
    EVERY_FIELD_NUMBER: _ClassVar[int]
    size: int
    slide: int
    every: float
    def __init__(self, size: _Optional[int] = ..., slide: _Optional[int] = ..., every: _Optional[float] = ...) -> None: ...

class PunctuationWindow(_message.Message):
    __slots__ = ("predicate",)
    PREDICATE_FIELD_NUMBER: _ClassVar[int]
    predicate: Component
    def __init__(self, predicate: _Optional[_Union[Component, _Mapping]] = ...) -> None: ...

class PolicyWindow(_message.Message):
    __slots__ = ("policy", "every")
    POLICY_FIELD_NUMBER: _ClassVar[int]
    EVERY_FIELD_NUMBER: _ClassVar[int]
    policy: Component
    every: float
    def __init__(self, policy: _Optional[_Union[Component, _Mapping]] = ..., every: _Optional[float] = ...) -> None: ...

class StreamWindow(_message.Message):
    __slots__ = ("tumbling", "sliding", "session", "count", "punctuation", "policy")
    TUMBLING_FIELD_NUMBER: _ClassVar[int]
    SLIDING_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    PUNCTUATION_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    tumbling: TumblingWindow
    sliding: SlidingWindow
    session: SessionWindow
    count: CountWindow
    punctuation: PunctuationWindow
    policy: PolicyWindow
    def __init__(self, tumbling: _Optional[_Union[TumblingWindow, _Mapping]] = ..., sliding: _Optional[_Union[SlidingWindow, _Mapping]] = ..., session: _Optional[_Union[SessionWindow, _Mapping]] = ..., count: _Optional[_Union[CountWindow, _Mapping]] = ..., punctuation: _Optional[_Union[PunctuationWindow, _Mapping]] = ..., policy: _Optional[_Union[PolicyWindow, _Mapping]] = ...) -> None: ...

class StreamQuery(_message.Message):
    __slots__ = ("name", "window")
    NAME_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    name: str
    window: StreamWindow
    def __init__(self, name: _Optional[str] = ..., window: _Optional[_Union[StreamWindow, _Mapping]] = ...) -> None: ...

class StreamSpec(_message.Message):
    __slots__ = ("name", "monoid", "dimensions", "queries", "allowed_lateness", "keyed", "late", "final", "optimizer")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MONOID_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    QUERIES_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_LATENESS_FIELD_NUMBER: _ClassVar[int]
    KEYED_FIELD_NUMBER: _ClassVar[int]
    LATE_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZER_FIELD_NUMBER: _ClassVar[int]
    name: str
    monoid: Component
    dimensions: _containers.RepeatedCompositeFieldContainer[Dimension]
    queries: _containers.RepeatedCompositeFieldContainer[StreamQuery]
    allowed_lateness: float
    keyed: bool
    late: str
    final: str
    optimizer: str
    def __init__(self, name: _Optional[str] = ..., monoid: _Optional[_Union[Component, _Mapping]] = ..., dimensions: _Optional[_Iterable[_Union[Dimension, _Mapping]]] = ..., queries: _Optional[_Iterable[_Union[StreamQuery, _Mapping]]] = ..., allowed_lateness: _Optional[float] = ..., keyed: _Optional[bool] = ..., late: _Optional[str] = ..., final: _Optional[str] = ..., optimizer: _Optional[str] = ...) -> None: ...

class StreamInfo(_message.Message):
    __slots__ = ("spec", "watermark", "watermark_float", "dropped", "keys", "plan")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    WATERMARK_FIELD_NUMBER: _ClassVar[int]
    WATERMARK_FLOAT_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    spec: StreamSpec
    watermark: int
    watermark_float: float
    dropped: int
    keys: int
    plan: str
    def __init__(self, spec: _Optional[_Union[StreamSpec, _Mapping]] = ..., watermark: _Optional[int] = ..., watermark_float: _Optional[float] = ..., dropped: _Optional[int] = ..., keys: _Optional[int] = ..., plan: _Optional[str] = ...) -> None: ...

class CreateStreamRequest(_message.Message):
    __slots__ = ("spec", "if_not_exists")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    IF_NOT_EXISTS_FIELD_NUMBER: _ClassVar[int]
    spec: StreamSpec
    if_not_exists: bool
    def __init__(self, spec: _Optional[_Union[StreamSpec, _Mapping]] = ..., if_not_exists: _Optional[bool] = ...) -> None: ...

class GetStreamRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListStreamsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListStreamsResponse(_message.Message):
    __slots__ = ("streams",)
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    streams: _containers.RepeatedCompositeFieldContainer[StreamInfo]
    def __init__(self, streams: _Optional[_Iterable[_Union[StreamInfo, _Mapping]]] = ...) -> None: ...

class DeleteStreamRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteStreamResponse(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    def __init__(self, deleted: _Optional[bool] = ...) -> None: ...

class AddQueryRequest(_message.Message):
    __slots__ = ("stream", "query")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    stream: str
    query: StreamQuery
    def __init__(self, stream: _Optional[str] = ..., query: _Optional[_Union[StreamQuery, _Mapping]] = ...) -> None: ...

class RemoveQueryRequest(_message.Message):
    __slots__ = ("stream", "query")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    stream: str
    query: str
    def __init__(self, stream: _Optional[str] = ..., query: _Optional[str] = ...) -> None: ...

class StreamInsertRequest(_message.Message):
    __slots__ = ("stream", "updates", "columns", "batch_id", "watermark", "watermark_float")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    UPDATES_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    WATERMARK_FIELD_NUMBER: _ClassVar[int]
    WATERMARK_FLOAT_FIELD_NUMBER: _ClassVar[int]
    stream: str
    updates: _containers.RepeatedCompositeFieldContainer[Update]
    columns: Columns
    batch_id: str
    watermark: int
    watermark_float: float
    def __init__(self, stream: _Optional[str] = ..., updates: _Optional[_Iterable[_Union[Update, _Mapping]]] = ..., columns: _Optional[_Union[Columns, _Mapping]] = ..., batch_id: _Optional[str] = ..., watermark: _Optional[int] = ..., watermark_float: _Optional[float] = ...) -> None: ...

class Bounds(_message.Message):
    __slots__ = ("start", "start_float", "end", "end_float")
    START_FIELD_NUMBER: _ClassVar[int]
    START_FLOAT_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    END_FLOAT_FIELD_NUMBER: _ClassVar[int]
    start: int
    start_float: float
    end: int
    end_float: float
    def __init__(self, start: _Optional[int] = ..., start_float: _Optional[float] = ..., end: _Optional[int] = ..., end_float: _Optional[float] = ...) -> None: ...

class StreamResult(_message.Message):
    __slots__ = ("query", "key", "window", "count", "values", "payload", "final", "replaces")
    class ValuesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    QUERY_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    REPLACES_FIELD_NUMBER: _ClassVar[int]
    query: str
    key: str
    window: Bounds
    count: int
    values: _containers.ScalarMap[str, float]
    payload: bytes
    final: bool
    replaces: _containers.RepeatedCompositeFieldContainer[Bounds]
    def __init__(self, query: _Optional[str] = ..., key: _Optional[str] = ..., window: _Optional[_Union[Bounds, _Mapping]] = ..., count: _Optional[int] = ..., values: _Optional[_Mapping[str, float]] = ..., payload: _Optional[bytes] = ..., final: _Optional[bool] = ..., replaces: _Optional[_Iterable[_Union[Bounds, _Mapping]]] = ...) -> None: ...

class StreamInsertResponse(_message.Message):
    __slots__ = ("batch_id", "inserted", "dropped", "duplicate", "results")
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    INSERTED_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    inserted: int
    dropped: int
    duplicate: bool
    results: _containers.RepeatedCompositeFieldContainer[StreamResult]
    def __init__(self, batch_id: _Optional[str] = ..., inserted: _Optional[int] = ..., dropped: _Optional[int] = ..., duplicate: _Optional[bool] = ..., results: _Optional[_Iterable[_Union[StreamResult, _Mapping]]] = ...) -> None: ...

class AdvanceRequest(_message.Message):
    __slots__ = ("stream", "watermark", "watermark_float")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    WATERMARK_FIELD_NUMBER: _ClassVar[int]
    WATERMARK_FLOAT_FIELD_NUMBER: _ClassVar[int]
    stream: str
    watermark: int
    watermark_float: float
    def __init__(self, stream: _Optional[str] = ..., watermark: _Optional[int] = ..., watermark_float: _Optional[float] = ...) -> None: ...

class AdvanceResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[StreamResult]
    def __init__(self, results: _Optional[_Iterable[_Union[StreamResult, _Mapping]]] = ...) -> None: ...

class StreamWatchRequest(_message.Message):
    __slots__ = ("stream", "keys", "queries")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    QUERIES_FIELD_NUMBER: _ClassVar[int]
    stream: str
    keys: _containers.RepeatedScalarFieldContainer[str]
    queries: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, stream: _Optional[str] = ..., keys: _Optional[_Iterable[str]] = ..., queries: _Optional[_Iterable[str]] = ...) -> None: ...

class StreamEvent(_message.Message):
    __slots__ = ("result", "late", "info")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    LATE_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    result: StreamResult
    late: Update
    info: StreamInfo
    def __init__(self, result: _Optional[_Union[StreamResult, _Mapping]] = ..., late: _Optional[_Union[Update, _Mapping]] = ..., info: _Optional[_Union[StreamInfo, _Mapping]] = ...) -> None: ...
