"""One module per command; each exposes ``register(cli: click.Group)``."""
