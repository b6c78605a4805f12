"""Bodies of the price book and buying-costs endpoints."""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator

from api.http.schemas import Strict
from api.http.storable import document_storable_text, storable_field

Level = Literal["exact", "brand", "category"]
Basis = Literal["confirmed", "likely"]
LEVEL_DOC = (
    "Which niche: `exact` (category, brand, size and condition; a key omitted means listings "
    "that do not give it), `brand` (the brand within the category, every size and "
    "condition), `category` (every brand). Omitted: `exact` when `size` or `condition` is "
    "given, else `brand` when `brand` is, else `category`."
)


class PriceBookQuery(BaseModel):
    """A niche of a site. Only niches that a listing of the workspace's own monitors of the
    site falls in are answered; any other is a 404, whatever the market holds."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=document_storable_text)
    _storable = field_validator("*", mode="after")(storable_field)

    site: str = Field(
        min_length=8,
        max_length=300,
        description="The marketplace site: a catalogue URL's origin (`https://www.vinted.fr`).",
    )
    category_id: int = Field(ge=0, le=2_147_483_647)
    brand: str | None = Field(default=None, max_length=200)
    size: str | None = Field(default=None, max_length=100)
    condition: str | None = Field(default=None, max_length=100)
    level: Level | None = Field(default=None, description=LEVEL_DOC)

    @property
    def chosen_level(self) -> Level:
        if self.level is not None:
            return self.level
        if self.size is not None or self.condition is not None:
            return "exact"
        return "brand" if self.brand is not None else "category"


class SalesOut(BaseModel):
    """What some sales say (amounts as decimal strings, in the book's currency)."""

    sales: int
    median_sold_price: Decimal | None
    sold_price_p25: Decimal | None = Field(description="The middle half's lower end")
    sold_price_p75: Decimal | None = Field(description="The middle half's upper end")
    median_days_to_sell: float | None
    newest_sale_at: str | None
    oldest_sale_at: str | None


class LevelOut(BaseModel):
    level: Level
    label: str
    confirmed: SalesOut
    likely: SalesOut = Field(description="Sold by absence from the feed: a guess")


class BuyBelowOut(BaseModel):
    price: Decimal | None = Field(description="The most to pay; null: no price keeps the margin")
    sold_for: Decimal
    margin: Decimal
    margin_share: float
    shipping: Decimal
    packaging: Decimal
    line: str = Field(description="The computation in one line")


class PriceBookOut(BaseModel):
    site: str
    category_id: int | None
    brand: str | None
    size: str | None
    condition: str | None
    label: str
    currency: str | None
    level: Level | None = Field(description="The level priced by; null: too few sales")
    basis: Basis | None = Field(
        description="`confirmed`; `likely` only where no sale of the category is confirmed"
    )
    figures: SalesOut | None = Field(description="What the price rests on (`level`, `basis`)")
    explanation: str = Field(description="What the price rests on, or why there is none")
    buy_below: BuyBelowOut | None
    levels: list[LevelOut]
    window_sales: int = Field(description="At most this many sales per level and evidence")
    window_days: int = Field(description="No sale older than this many days")


class AnalysisNicheOut(BaseModel):
    rank: int
    label: str
    book: PriceBookOut | None = Field(description="null: not readable (see `note`)")


class AnalysisPriceBookOut(BaseModel):
    analysis_id: str
    site: str | None
    niches: list[AnalysisNicheOut]
    note: str | None = None


# Numbers on the wire (the schema says so, and Schemathesis holds the handler to it); amounts
# are rounded to cents and the margin to tenths of a percent, rather than refused.
Amount = Annotated[Decimal, WithJsonSchema({"type": "number", "minimum": 0, "maximum": 10_000})]
Share = Annotated[Decimal, WithJsonSchema({"type": "number", "minimum": 0, "exclusiveMaximum": 1})]


class BuyingCostsIn(Strict):
    shipping: Amount = Field(ge=0, le=10_000, description="Per item")
    packaging: Amount = Field(ge=0, le=10_000, description="Per item")
    margin: Share = Field(ge=0, lt=1, description="The share of the resale price kept, 0.3: 30%")

    @field_validator("shipping", "packaging")
    @classmethod
    def _cents(cls, value: Decimal) -> Decimal:
        return value.quantize(Decimal("0.01"))

    @field_validator("margin")
    @classmethod
    def _tenths_of_a_percent(cls, value: Decimal) -> Decimal:
        return value.quantize(Decimal("0.001"), rounding=ROUND_DOWN)  # never up to 100%


class BuyingCostsOut(BaseModel):
    shipping: Decimal
    packaging: Decimal
    margin: Decimal
    custom: bool = Field(description="false: the defaults, never changed")
    formula: str
