"""What a configuration problem looks like: a message and where it is (nats-server's ``file:line:col``)."""

from __future__ import annotations

from msgspec import Struct


class ConfigIssue(Struct, frozen=True):
    """One problem (or warning) found in a configuration, with where it is."""

    message: str
    file: str = ""
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line:
            return f"{self.file or '<config>'}:{self.line}:{self.col}: {self.message}"
        if self.file:
            return f"{self.file}: {self.message}"
        return self.message


class ConfigError(ValueError):
    """A configuration that cannot be used; ``issues`` lists every problem found."""

    def __init__(self, issues: list[ConfigIssue]) -> None:
        self.issues = issues
        super().__init__("\n".join(str(i) for i in issues))
