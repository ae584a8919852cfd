"""Image references as the engines read them: validation of a mirror, tags spelled out, the registry a pull talks
to, a name on a mirror, and the key an engine lists an image under. Pure string work, no engine."""

from __future__ import annotations

from swerl_cli.core.errors import ConfigError


def check_registry(registry: str) -> str:
    """Validate `HOST[:PORT][/NAMESPACE]` (a mirror); ConfigError otherwise."""
    parts = registry.rstrip("/").split("/")
    bad = not registry or "://" in registry or any(c.isspace() for c in registry) or "" in parts
    if bad or (len(parts) > 1 and ":" in parts[-1]):
        raise ConfigError(
            f"field 'registry': expected HOST[:PORT]/NAMESPACE (e.g. mirror.local:5000/swebench); got {registry!r}"
        )
    return registry


def split_ref(image: str) -> tuple[str | None, str, str]:
    """(registry host or None, repository path, ':tag' or '@digest'); a bare name gets ':latest'."""
    name, digest = image.split("@", 1) if "@" in image else (image, None)
    first, _, rest = name.partition("/")
    host = first if rest and ("." in first or ":" in first or first == "localhost") else None
    path = rest if host else name
    if digest is not None:
        return host, path, "@" + digest
    last = path.rsplit("/", 1)[-1]
    if ":" in last:
        path, _, tag = path.rpartition(":")
        return host, path, ":" + tag
    return host, path, ":latest"


def normalize(image: str) -> str:
    """`image` with its tag spelled out (`x` -> `x:latest`), as pulls and lookups use it."""
    host, path, suffix = split_ref(image)
    return f"{host}/{path}{suffix}" if host else f"{path}{suffix}"


def registry_of(image: str) -> str:
    """The registry a pull of `image` talks to: `registry_of("swebench/x:latest") == "docker.io"`."""
    return split_ref(image)[0] or "docker.io"


def mirror(image: str, registry: str | None) -> str:
    """`image` as found on the mirror `HOST[:PORT]/NAMESPACE`: the host and namespace are replaced, the last path
    component and the tag kept. A mirror without a namespace keeps the image's own path.

    >>> mirror("swebench/sweb.eval.x86_64.django_1776_django-16255:latest", "mirror.local:5000/team")
    'mirror.local:5000/team/sweb.eval.x86_64.django_1776_django-16255:latest'
    >>> mirror("docker.io/swebench/x", "127.0.0.1:5000")
    '127.0.0.1:5000/swebench/x:latest'
    """
    if not registry:
        return image
    _, path, suffix = split_ref(image)
    registry = registry.rstrip("/")
    if "/" in registry:
        return f"{registry}/{path.rsplit('/', 1)[-1]}{suffix}"
    return f"{registry}/{path}{suffix}"


def engine_key(image: str) -> str:
    """How the engine lists `image`: Docker Hub names without `docker.io/` and `library/`, tag spelled out."""
    host, path, suffix = split_ref(image)
    if host in (None, "docker.io", "index.docker.io", "registry-1.docker.io"):
        return path.removeprefix("library/") + suffix
    return f"{host}/{path}{suffix}"


def task_images(images: list[str], registry: str | None) -> list[str]:
    """The distinct image references to fetch for these task images (mirrored, tags spelled out), in order."""
    return list(dict.fromkeys(normalize(mirror(i, registry)) for i in images))
