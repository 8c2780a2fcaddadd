"""Finding backends: the hooks a plugin implements, the entry points, the registry and its records."""
