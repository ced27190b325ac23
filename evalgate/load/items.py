"""The data set's items (docs/spec.md): what every target and scorer reads."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field


class Turn(BaseModel):
    """One turn of a `turns` item; its gates and scorers see only this turn."""

    model_config = ConfigDict(extra="forbid")

    input: Any
    output: Any = None
    # Spec entries (mappings with `type`); from Python also Scorers or {"scorer", "threshold"}.
    gates: list[Any] = Field(default_factory=list)
    scorers: list[Any] = Field(default_factory=list)


class Item(BaseModel):
    """One test case. Exactly one of `input`, `inputs`, `turns` is set."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=False)

    id: str | None = None
    input: Any = None
    inputs: list[Any] | None = None
    turns: list[Turn] | None = None
    ground_truth: Any = Field(
        default=None, validation_alias=AliasChoices("ground_truth", "groundTruth")
    )
    context: list[str] | None = None
    expected_trajectory: Any = Field(
        default=None,
        validation_alias=AliasChoices("expected_trajectory", "expectedTrajectory"),
    )
    metadata: dict[str, Any] | None = None
    output: Any = None
    outputs: list[Any] | None = None

    def turn_inputs(self) -> list[Any]:
        """The inputs sent to the target, one per turn."""
        if self.turns is not None:
            return [t.input for t in self.turns]
        if self.inputs is not None:
            return list(self.inputs)
        return [self.input]

    @property
    def first_input(self) -> Any:
        """The input scorers see: the first turn's for a conversation."""
        inputs = self.turn_inputs()
        return inputs[0] if inputs else None


ITEM_FIELDS = (
    "id",
    "input",
    "inputs",
    "turns",
    "ground_truth",
    "context",
    "expected_trajectory",
    "metadata",
    "output",
    "outputs",
)

# Fields whose type is `Any`: validation takes their value as it is.
_AS_GIVEN = frozenset({"input", "output", "ground_truth", "expected_trajectory"})
_DEFAULTS = dict.fromkeys(Item.model_fields)
_new_item = Item.__new__
_set = object.__setattr__


def _defaults_are_none() -> bool:
    fields = Item.model_fields.values()
    return all(f.default is None and f.default_factory is None for f in fields) and not Item.__private_attributes__


_PLAIN_OK = _defaults_are_none()  # else `plain_item` would have to fill defaults: it declines


def plain_item(raw: dict[str, Any]) -> Item | None:
    """`Item.model_validate(raw)`, built without validating, for the common item that needs none.

    That is an item of `id` (a string) and `Any` fields only: validation would keep every value
    as it is. Three times as fast as validation, which counts over 100,000 items. None for any
    other item: validate it then.
    """
    if not _PLAIN_OK or not _PLAIN_KEYS.issuperset(raw):
        return None
    item_id = raw.get("id")
    if item_id is not None and item_id.__class__ is not str:
        return None
    values = {**_DEFAULTS, **raw}
    item = _new_item(Item)
    # What pydantic's model_construct sets on every model: tests hold this equal to validation.
    _set(item, "__dict__", values)
    _set(item, "__pydantic_fields_set__", set(raw))
    _set(item, "__pydantic_extra__", None)
    _set(item, "__pydantic_private__", None)
    return item


_PLAIN_KEYS = _AS_GIVEN | {"id"}
