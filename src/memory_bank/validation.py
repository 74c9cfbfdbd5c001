"""Connexion validator tweaks: parameter errors that name the parameter."""

from __future__ import annotations

from typing import Any

from connexion.validators import ParameterValidator


class NamingParameterValidator(ParameterValidator):
    """Like Connexion's, but every error says which parameter it is about."""

    @staticmethod
    def validate_parameter(
        parameter_type: str, value: Any, param: dict[str, Any], param_name: str | None = None
    ) -> str | None:
        """Validate one parameter; the message ends with "for <in> parameter '<name>'"."""
        error = ParameterValidator.validate_parameter(parameter_type, value, param, param_name)
        if error is None or "parameter '" in error:
            return error
        first = error.strip().split("\n", 1)[0]
        return f"{first} for {parameter_type} parameter '{param['name']}'"
