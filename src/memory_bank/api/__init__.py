"""REST handlers: one module per resource, functions named by operationId."""

# Modules whose public functions are handlers; the app factory maps operationIds to them.
HANDLER_MODULES = ("memory", "prompt", "service", "review", "panel", "org", "export")
