"""The JSON Schema of spec files, for editors' completion (`evalgate schema`)."""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter

from evalgate.load.items import Item
from evalgate.load.spec.models import Spec


def _union(models: Sequence[type[BaseModel]]) -> Any:
    return Annotated[typing.Union[tuple(models)], Field(discriminator="type")]  # noqa: UP007


def json_schema(gate_models: Sequence[type[BaseModel]], scorer_models: Sequence[type[BaseModel]]) -> dict[str, Any]:
    """The spec's schema, with `gates`/`scorers` entries (top level and per turn) as the given models.

    The models are the scorer registry's entry models; they are passed in so this package knows
    nothing of scorers.
    """
    schema = Spec.model_json_schema()
    defs = schema.setdefault("$defs", {})
    item = Item.model_json_schema(ref_template="#/$defs/{model}", by_alias=False)
    defs.update(item.pop("$defs", {}))
    defs["Item"] = item
    schema["properties"]["data"]["anyOf"][1]["items"] = {"$ref": "#/$defs/Item"}
    turn = defs["Turn"]["properties"]
    for key, models in (("gates", gate_models), ("scorers", scorer_models)):
        entries = TypeAdapter(list[_union(models)]).json_schema(ref_template="#/$defs/{model}")  # type: ignore[misc]
        defs.update(entries.pop("$defs", {}))
        description = schema["properties"][key].get("description")
        schema["properties"][key] = {**entries, "default": [], "description": description}
        turn[key]["items"] = entries["items"]
    return schema
