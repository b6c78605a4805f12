"""A listing's condition: the five canonical conditions and the labels each site writes them in.

Today's catalogue writes the condition in the site's language ("Nuovo senza cartellino"). The
canonical condition is stored as its English label ("New without tags"), which is also what the
legacy API sent, so niches built from either generation line up and read well.
"""

from __future__ import annotations

CANONICAL: dict[str, str] = {
    "new_with_tags": "New with tags",
    "new_without_tags": "New without tags",
    "very_good": "Very good",
    "good": "Good",
    "satisfactory": "Satisfactory",
}
# MARKETPLACE.md's table (en, fr, de, it, es, nl, pl), plus a few spellings seen in the wild.
_LABELS: dict[str, tuple[str, ...]] = {
    "new_with_tags": ("New with tags", "Neuf avec étiquette", "Neu mit Etikett",
                      "Nuovo con cartellino", "Nuevo con etiquetas", "Nieuw met prijskaartje",
                      "Nowy z metką", "Neuf avec étiquettes"),
    "new_without_tags": ("New without tags", "Neuf sans étiquette", "Neu ohne Etikett",
                         "Nuovo senza cartellino", "Nuevo sin etiquetas",
                         "Nieuw zonder prijskaartje", "Nowy bez metki", "Neuf sans étiquettes"),
    "very_good": ("Very good", "Très bon état", "Sehr gut", "Ottime", "Ottime condizioni",
                  "Muy bueno", "Zeer goed", "Bardzo dobry"),
    "good": ("Good", "Bon état", "Gut", "Buone", "Buone condizioni", "Bueno", "Goed", "Dobry"),
    "satisfactory": ("Satisfactory", "Satisfaisant", "Zufriedenstellend", "Discrete",
                     "Discrete condizioni", "Satisfactorio", "Redelijk", "Zadowalający"),
}  # fmt: skip
_BY_LABEL: dict[str, str] = {
    label.casefold(): key for key, labels in _LABELS.items() for label in labels
}
# The marketplace's condition ids (`status_ids[]`), for checking that a filter was honoured.
STATUS_IDS: dict[int, str] = {
    6: "new_with_tags", 1: "new_without_tags", 2: "very_good", 3: "good", 4: "satisfactory",
}  # fmt: skip


def canonical_condition(label: str | None) -> str | None:
    """The canonical condition (its English label) of a site's label, any listed language, any
    case; None when the label is unknown (the caller keeps the raw label and flags it)."""
    if not label:
        return None
    key = _BY_LABEL.get(" ".join(label.split()).casefold())
    return CANONICAL[key] if key is not None else None


def is_condition_label(label: str) -> bool:
    return canonical_condition(label) is not None


def conditions_of_status_ids(ids: tuple[int, ...]) -> frozenset[str]:
    """Canonical conditions the `status_ids` filter asks for (unknown ids are ignored)."""
    return frozenset(CANONICAL[STATUS_IDS[i]] for i in ids if i in STATUS_IDS)
