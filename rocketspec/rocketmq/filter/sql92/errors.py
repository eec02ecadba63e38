"""The two errors the SQL92 filter raises: one while compiling, one while evaluating."""
from __future__ import annotations


class FilterError(Exception):
    """Base of the filter errors."""


class FilterCompileError(FilterError):
    """The expression does not compile: RocketMQ's ``SelectorParser.parse`` throws
    ``MQFilterException`` for it (syntax, lexical and semantic errors, literal overflow),
    or it is beyond this implementation's explicit size limits.

    ``position`` is the 0-based character offset of the offending place (None when the
    error concerns the whole expression); ``line`` and ``column`` are 1-based.
    """

    def __init__(self, message: str, *, expr: str | None = None, position: int | None = None):
        self.message = message
        self.expr = expr
        self.position = position
        self.line: int | None = None
        self.column: int | None = None
        if expr is not None and position is not None:
            self.line = expr.count("\n", 0, position) + 1
            self.column = position - (expr.rfind("\n", 0, position) + 1) + 1
            text = f"{message} (at line {self.line}, column {self.column})"
        else:
            text = message
        super().__init__(text)


class FilterEvaluateError(FilterError):
    """Evaluating a compiled expression threw in RocketMQ (a RuntimeException such as a
    NumberFormatException wrapped by ``ComparisonExpression``, or a ClassCastException).
    The broker logs it and treats the message as not matched.

    ``java_exception`` names the Java exception RocketMQ would have thrown.
    """

    def __init__(self, message: str, java_exception: str = "RuntimeException"):
        self.message = message
        self.java_exception = java_exception
        super().__init__(f"{java_exception}: {message}")
