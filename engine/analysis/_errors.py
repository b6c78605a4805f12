"""Errors of the analysis package."""

from __future__ import annotations


class InvalidExport(ValueError):
    """A monitor export document that cannot be analysed (the API answers it with a 4xx).

    `where` names the offending part (e.g. ``listings[3].price``) and `problem` says what is
    wrong with it; the message combines both.
    """

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"invalid monitor export: {where}: {problem}")
