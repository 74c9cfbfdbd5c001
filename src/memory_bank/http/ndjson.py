"""Response validation for newline-delimited JSON (the export): each line checked on its own."""

from __future__ import annotations

import json
from collections.abc import Generator
from typing import Any

from connexion.exceptions import NonConformingResponseBody
from connexion.validators.json import JSONResponseBodyValidator

NDJSON = "application/x-ndjson"


class NdjsonResponseValidator(JSONResponseBodyValidator):
    """Every line of the body is JSON and matches the response schema (which describes a line)."""

    def _parse(self, stream: Generator[bytes, None, None]) -> Any:
        text = b"".join(stream).decode(self._encoding)
        try:
            # Lines end at "\n" only: U+2028 and friends may sit raw inside a JSON string.
            return [json.loads(line) for line in text.split("\n") if line.strip()]
        except json.JSONDecodeError as exc:
            raise NonConformingResponseBody(f"a line is not JSON: {exc}") from None

    def _validate(self, body: Any) -> None:
        for line in body:
            super()._validate(line)
