"""Converting environment strings to the type of a default value."""


def convert(raw, default):
    """`raw` (a string from the environment) as the type of `default`."""
    if isinstance(default, list):
        return [item.strip() for item in raw.split(",") if item.strip()]
    if default is None:
        return raw
    return type(default)(raw)
