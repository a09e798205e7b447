"""The active ontology: labels, relationship types, required properties, single-valued types."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

ONTOLOGY_FILE = Path(__file__).resolve().parent.parent / "ontology.yaml"
_IDENT = re.compile(r"^[A-Z][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class LabelSpec:
    name: str
    ceid_prefix: str
    required: tuple[str, ...]
    vector: bool


@dataclass(frozen=True)
class Ontology:
    version: str
    labels: dict[str, LabelSpec]
    relationships: dict[str, dict[str, Any]]

    def has_label(self, label: str) -> bool:
        return label in self.labels

    def has_type(self, rel_type: str) -> bool:
        return rel_type in self.relationships

    def single_valued(self, rel_type: str) -> bool:
        return self.single_valued_side(rel_type) is not None

    def single_valued_side(self, rel_type: str) -> str | None:
        """``source``, ``target`` or None: which end of the edge may have only one."""
        value = self.relationships.get(rel_type, {}).get("single_valued")
        if value in (None, False):
            return None
        return "source" if value is True else str(value)

    def label_for_ceid(self, ceid: str) -> str | None:
        prefix = ceid.split(":", 1)[0]
        for spec in self.labels.values():
            if spec.ceid_prefix == prefix:
                return spec.name
        return None


def parse_ontology(data: dict[str, Any]) -> Ontology:
    labels = {}
    for name, spec in data["labels"].items():
        if not _IDENT.match(name):
            raise ValueError(f"bad label name {name!r}")
        labels[name] = LabelSpec(
            name, spec["ceid_prefix"], tuple(spec.get("required", [])), bool(spec.get("vector"))
        )
    rels = {}
    for name, spec in data["relationships"].items():
        if not re.match(r"^[A-Z][A-Z0-9_]*$", name):
            raise ValueError(f"bad relationship type {name!r}")
        rels[name] = dict(spec or {})
    return Ontology(str(data["ontology_version"]), labels, rels)


@lru_cache(maxsize=4)
def load_ontology(path: Path = ONTOLOGY_FILE) -> Ontology:
    return parse_ontology(yaml.safe_load(path.read_text()))
