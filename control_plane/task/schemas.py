"""Answer bodies of the task routes (camelCase on the wire); the CLI prints the same ones."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, AliasGenerator, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from control_plane.wire import Timestamp, WireModel


class TaskError(WireModel):
    code: str
    message: str


class TaskOut(WireModel):
    # Read by attribute name, written camelCase: a row has no camelCase attributes, and looking each
    # one up first (and missing) made listing tasks a third slower than building the dict by hand.
    model_config = ConfigDict(alias_generator=AliasGenerator(serialization_alias=to_camel))

    # the row's ``id`` is the public ``taskId`` (read from either)
    task_id: str = Field(validation_alias=AliasChoices("id", "taskId"))
    project_id: str
    index_id: str
    type: str
    status: str
    created_at: Timestamp
    started_at: Timestamp | None
    finished_at: Timestamp | None
    details: dict[str, Any] = Field(description=(
        "Counts (received, indexed, deleted, previousDocCount) and progress. An upload or feed sync into an "
        "index with a dynamic mapping adds fieldsAdded [{field, type}], mappingTaskId (the rebuild that "
        "indexes them), conflicts [{path, message, field, type, id}] with conflictCount (values not of their "
        "field's type: stored, not indexed as that type) and unmapped [{field, path, message}]"))
    error: TaskError | None

    @field_validator("details", mode="before")
    @classmethod
    def _no_details(cls, value: Any) -> Any:
        return value or {}


class TaskList(WireModel):
    items: list[TaskOut]
    next_cursor: str | None
