"""A health check's result, rendered as natscli's ``server check`` renders it (jsm.go ``monitor.Result``).

A check collects OK, warning and critical lines and performance data; its status is the worst of
them. Formats: ``nagios`` (the default, one line: ``OK Connection OK:… | rtt=0.0002s;0.5000;1.0000``),
``json``, ``prometheus`` (gauges ``<namespace>_<check>_<metric>`` and a ``status_code``) and
``text`` (tables). The exit code is Nagios's: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (always 0 for
``prometheus``, as natscli).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pyjetstream.api.timefmt import format_go_duration

__all__ = ["CheckResult", "PerfData", "go_duration"]

_CODES = {"OK": 0, "WARNING": 1, "CRITICAL": 2, "UNKNOWN": 3}


@dataclass
class PerfData:
    """One metric (jsm.go ``PerfDataItem``): ``value`` and its thresholds, ``unit`` ``s``/``B``/``%``/``""``."""

    name: str
    value: float
    warn: float = 0.0
    crit: float = 0.0
    unit: str = ""
    help: str = ""

    def __str__(self) -> str:
        fmt = "{:.4f}" if self.unit == "s" else "{:.0f}"
        name = f"'{self.name}'" if any(c in self.name for c in " \t") else self.name
        text = f"{name}={fmt.format(self.value)}{self.unit}"
        if self.warn or self.crit:
            text += f";{fmt.format(self.warn)}" if self.warn else ";"
            if self.crit:
                text += f";{fmt.format(self.crit)}"
        return text


@dataclass
class CheckResult:
    """What a check found (jsm.go ``monitor.Result``)."""

    name: str
    check: str
    oks: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    criticals: list[str] = field(default_factory=list)
    perf: list[PerfData] = field(default_factory=list)

    def ok(self, text: str) -> None:
        self.oks.append(text)

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def critical(self, text: str) -> None:
        self.criticals.append(text)

    def ok_if_clean(self, text: str) -> None:
        if not self.warnings and not self.criticals:
            self.ok(text)

    def pd(self, *items: PerfData) -> None:
        self.perf.extend(items)

    @property
    def status(self) -> str:
        return "CRITICAL" if self.criticals else "WARNING" if self.warnings else "OK"

    def exit_code(self, fmt: str) -> int:
        return 0 if fmt == "prometheus" else _CODES[self.status]

    def render(self, fmt: str, namespace: str = "nats_server_check") -> str:
        if fmt == "json":
            return self._json()
        if fmt == "prometheus":
            return self._prometheus(namespace)
        if fmt == "text":
            return self._text()
        return self._nagios()

    def _nagios(self) -> str:
        parts = [self.name, *(f"Crit:{c}" for c in self.criticals), *(f"Warn:{w}" for w in self.warnings)]
        parts += [f"OK:{o}" for o in self.oks]
        line = f"{self.status} {' '.join(parts)}"
        return f"{line} | {' '.join(str(p) for p in self.perf)}" if self.perf else line

    def _json(self) -> str:
        doc: dict[str, object] = {"status": self.status, "check_suite": self.check, "check_name": self.name}
        if self.warnings:
            doc["warning"] = self.warnings
        if self.criticals:
            doc["critical"] = self.criticals
        if self.oks:
            doc["ok"] = self.oks
        doc["perf_data"] = [
            {"name": p.name, "value": _number(p.value), "warning": _number(p.warn), "critical": _number(p.crit),
             **({"unit": p.unit} if p.unit else {})}
            for p in self.perf
        ]  # fmt: skip
        return json.dumps(doc, indent=2)

    def _prometheus(self, namespace: str) -> str:
        item = self.name.replace('"', ".")
        families: dict[str, tuple[str, list[str]]] = {}
        for p in self.perf:
            metric = "_".join(x for x in (namespace, self.check, p.name) if x)
            help_text = p.help or f"Data about the NATS CLI check {self.check}"
            families[metric] = (help_text, [f'{metric}{{item="{item}"}} {_go_float(p.value)}'])
        metric = "_".join(x for x in (namespace, self.check, "status_code") if x)
        sample = f'{metric}{{item="{item}",status="{self.status}"}} {_CODES[self.status]}'
        families[metric] = (f"Nagios compatible status code for {self.check}", [sample])
        lines = []
        for name in sorted(families):
            help_text, samples = families[name]
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", *samples]
        return "\n".join(lines)

    def _text(self) -> str:
        lines = [f"{self.name}: {self.status}", ""]
        detail = [("OK", o) for o in self.oks] + [("Warning", w) for w in self.warnings]
        detail += [("Critical", c) for c in self.criticals]
        if detail:
            lines += ["Status Detail", "", *(f"  {s:<8}  {m}" for s, m in detail), ""]
        if self.perf:
            lines += ["Check Metrics", ""]
            lines += [f"  {p.name:<24} {_go_float(p.value):>14} {p.unit:<2}  crit {_go_float(p.crit)}  warn "
                      f"{_go_float(p.warn)}  {p.help}" for p in self.perf]  # fmt: skip
        return "\n".join(lines)


def _number(value: float) -> float | int:
    """A float64 as Go's encoding/json writes it: whole numbers without a fraction."""
    return int(value) if float(value).is_integer() else float(value)


def _go_float(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def go_duration(seconds: float) -> str:
    """A duration as Go's ``time.Duration.String()`` writes it: ``1.234567ms``, ``12.5s``, ``1m30s``
    (`pyjetstream.api.timefmt.format_go_duration` of the nanoseconds)."""
    return format_go_duration(round(seconds * 1e9))

