"""Requirement strings such as "urllib3>=2"."""

import re
from dataclasses import dataclass

_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:(==|>=|<=|>|<|!=)\s*([0-9][0-9a-z.]*))?\s*$")


@dataclass(frozen=True)
class Requirement:
    name: str
    op: str = ""
    version: str = ""

    @classmethod
    def parse(cls, text):
        """Parse "name", or "name<op>version" with one of == >= <= > < !=."""
        match = _REQUIREMENT.match(text)
        if match is None:
            raise ValueError(f"invalid requirement: {text!r}")
        name, op, version = match.groups()
        return cls(name, op or "", version or "")

    def __str__(self):
        return f"{self.name}{self.op}{self.version}"
