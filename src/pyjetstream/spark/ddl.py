"""Parse a schema given as a Spark DDL string (``"id long, tags array<string>"``) or as
Spark's JSON schema, without a running JVM: data source planning runs in Python workers
that have no SparkContext, where ``StructType.fromDDL`` cannot be used."""

from __future__ import annotations

import re

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    _parse_datatype_json_string,
)

__all__ = ["DdlError", "parse_struct"]

_PRIMITIVES: dict[str, type[DataType]] = {
    "string": StringType,
    "varchar": StringType,
    "char": StringType,
    "long": LongType,
    "bigint": LongType,
    "int": IntegerType,
    "integer": IntegerType,
    "short": ShortType,
    "smallint": ShortType,
    "byte": ByteType,
    "tinyint": ByteType,
    "double": DoubleType,
    "float": FloatType,
    "real": FloatType,
    "boolean": BooleanType,
    "bool": BooleanType,
    "binary": BinaryType,
    "date": DateType,
    "timestamp": TimestampType,
    "timestamp_ltz": TimestampType,
    "timestamp_ntz": TimestampNTZType,
}

_TOKEN = re.compile(r"\s*(`[^`]*`|[A-Za-z_][A-Za-z0-9_]*|\d+|[<>(),:])")


class DdlError(ValueError):
    pass


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if m is None:
                raise DdlError(f"cannot parse schema {text!r} at {text[pos : pos + 20]!r}")
            self.tokens.append(m.group(1))
            pos = m.end()
        self.i = 0

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok.lower() != expected):
            raise DdlError(f"schema {self.text!r}: expected {expected or 'more'}, found {tok!r}")
        self.i += 1
        return tok

    def fields(self, end: str | None) -> StructType:
        fields: list[StructField] = []
        while True:
            name = self.take().strip("`")
            if self.peek() == ":":
                self.take(":")
            typ = self.type()
            nullable = True
            if self.peek() and self.peek().lower() == "not":  # type: ignore[union-attr]
                self.take("not")
                self.take("null")
                nullable = False
            fields.append(StructField(name, typ, nullable))
            if self.peek() == ",":
                self.take(",")
                continue
            break
        if end is not None:
            self.take(end)
        return StructType(fields)

    def type(self) -> DataType:
        word = self.take().lower()
        if word == "array":
            self.take("<")
            element = self.type()
            self.take(">")
            return ArrayType(element)
        if word == "map":
            self.take("<")
            key = self.type()
            self.take(",")
            value = self.type()
            self.take(">")
            return MapType(key, value)
        if word == "struct":
            self.take("<")
            if self.peek() == ">":
                self.take(">")
                return StructType([])
            return self.fields(">")
        if word in ("decimal", "dec", "numeric"):
            precision, scale = 10, 0
            if self.peek() == "(":
                self.take("(")
                precision = int(self.take())
                if self.peek() == ",":
                    self.take(",")
                    scale = int(self.take())
                self.take(")")
            return DecimalType(precision, scale)
        if word in ("varchar", "char") and self.peek() == "(":
            self.take("(")
            self.take()
            self.take(")")
        cls = _PRIMITIVES.get(word)
        if cls is None:
            raise DdlError(f"schema {self.text!r}: unknown type {word!r}")
        return cls()


def parse_struct(text: str) -> StructType:
    """A ``StructType`` from DDL (``"a long, b struct<c: string>"``) or Spark's schema JSON."""
    stripped = text.strip()
    if stripped.startswith("{"):
        typ = _parse_datatype_json_string(stripped)
        if not isinstance(typ, StructType):
            raise DdlError(f"schema JSON {text!r} is not a struct")
        return typ
    if stripped.lower().startswith("struct<") and stripped.endswith(">"):
        stripped = stripped[len("struct<") : -1]
    parser = _Parser(stripped)
    result = parser.fields(None)
    if parser.peek() is not None:
        raise DdlError(f"schema {text!r}: unexpected {parser.peek()!r}")
    return result
