"""The project's error types: each message names the file (and line or key) at fault."""


class PipelineError(Exception):
    """Base class of the errors a user can act on (bad config, bad data, missing tools)."""


class ConfigError(PipelineError, ValueError):
    """A config file is missing, has an unknown key or a value of the wrong type."""


class DataError(PipelineError, ValueError):
    """A corpus file is missing, misaligned or not valid UTF-8."""
