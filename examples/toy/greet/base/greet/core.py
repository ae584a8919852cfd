def greet(name):
    """Return a friendly greeting for `name`."""
    name = name.upper()
    return f"Hello, {name}!"
