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
