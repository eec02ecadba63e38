"""The filter language of RocketMQ (digest section 9), written once.

Pure, stateless definitions that the reference broker and client use directly. The spec
judges tags with its own reading (`spec.tag_rules`), not with :mod:`.tags`; SQL92 is shared:

* Tags (:mod:`.tags`): :func:`java_string_hash`, :func:`tags_code`,
  :class:`SubscriptionData`, :func:`build_subscription`, :func:`broker_tag_match`,
  :func:`client_tag_match`.
* SQL92 (:mod:`.sql92`): :func:`compile_sql92` -> :class:`Expression` (``evaluate``),
  :func:`sql92_match`, :class:`FilterCompileError`, :class:`FilterEvaluateError`.
* The broker's whole decision for one message (:mod:`.broker_match`):
  :func:`broker_matches`; the properties it evaluates SQL92 on (:mod:`.properties`):
  :func:`stored_properties`.
"""
from .broker_match import broker_matches
from .properties import stored_properties
from .sql92 import (
    JAVA_MAX_NESTING,
    MAX_DEPTH,
    MAX_EXPR_LENGTH,
    Expression,
    FilterCompileError,
    FilterError,
    FilterEvaluateError,
    compile_sql92,
    sql92_match,
)
from .tags import (
    SQL92,
    SUB_ALL,
    TAG,
    SubscriptionData,
    SubscriptionError,
    broker_tag_match,
    build_subscription,
    client_tag_match,
    java_string_hash,
    tags_code,
)

__all__ = [
    "JAVA_MAX_NESTING", "MAX_DEPTH", "MAX_EXPR_LENGTH", "SQL92", "SUB_ALL", "TAG", "Expression", "FilterCompileError",
    "FilterError", "FilterEvaluateError", "SubscriptionData", "SubscriptionError",
    "broker_matches", "broker_tag_match", "build_subscription", "client_tag_match",
    "compile_sql92", "java_string_hash", "sql92_match", "stored_properties", "tags_code",
]
