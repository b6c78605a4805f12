"""robots.txt per RFC 9309: groups, longest match, allow wins ties, `*` and `$` patterns."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote


@dataclass(frozen=True, slots=True)
class _Rule:
    allow: bool
    pattern: str
    regex: re.Pattern[str]


def _compile(pattern: str) -> re.Pattern[str]:
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    regex = ".*".join(re.escape(unquote(part)) for part in body.split("*"))
    return re.compile(regex + ("$" if anchored else ""))


@dataclass(frozen=True, slots=True)
class RobotsRules:
    """The rules that apply to one user agent, or a blanket allow/deny."""

    rules: tuple[_Rule, ...] = ()
    allow_all: bool = False
    disallow_all: bool = False

    @classmethod
    def allowing_all(cls) -> RobotsRules:
        return cls(allow_all=True)

    @classmethod
    def disallowing_all(cls) -> RobotsRules:
        return cls(disallow_all=True)

    @classmethod
    def for_status(cls, status: int, text: str, product: str) -> RobotsRules:
        """RFC 9309 section 2.3.1: 4xx (unavailable) allows all, 5xx (unreachable) disallows."""
        if 200 <= status < 300:
            return cls.parse(text, product)
        if 400 <= status < 500:
            return cls.allowing_all()
        return cls.disallowing_all()

    @classmethod
    def parse(cls, text: str, product: str) -> RobotsRules:
        product = product.lower()
        groups: list[tuple[list[str], list[_Rule]]] = []
        agents: list[str] = []
        rules: list[_Rule] = []
        in_rules = False
        for raw in text.splitlines():
            line = raw.split("#", 1)[0].strip()
            if ":" not in line:
                continue
            key, _, value = line.partition(":")
            key, value = key.strip().lower(), value.strip()
            if key == "user-agent":
                if in_rules:
                    groups.append((agents, rules))
                    agents, rules, in_rules = [], [], False
                agents.append(value.lower())
            elif key in ("allow", "disallow"):
                in_rules = True
                if value:  # an empty disallow matches nothing
                    rules.append(_Rule(key == "allow", value, _compile(value)))
        if agents:
            groups.append((agents, rules))
        chosen: list[_Rule] = []
        matched = False
        for group_agents, group_rules in groups:
            if product in group_agents:
                chosen.extend(group_rules)
                matched = True
        if not matched:
            for group_agents, group_rules in groups:
                if "*" in group_agents:
                    chosen.extend(group_rules)
        return cls(rules=tuple(chosen))

    def can_fetch(self, target: str) -> bool:
        if self.disallow_all:
            return target == "/robots.txt"
        if self.allow_all:
            return True
        path = unquote(target or "/")
        best: _Rule | None = None
        for rule in self.rules:
            if rule.regex.match(path) and (
                best is None
                or len(rule.pattern) > len(best.pattern)
                or (len(rule.pattern) == len(best.pattern) and rule.allow)
            ):
                best = rule
        return best is None or best.allow
