"""The error raised for unusable data: a missing source, a malformed file, a mismatch."""


class DataError(ValueError):
    """Bad or unavailable data; the message names the file (and line) or field at fault."""
