"""The aiohttp app: the hook receiver and (from ``api``) the read API.

``__all__`` names the modules other packages may import; the rest are this package's own (tests and
bench may import any).
"""

__all__ = [
    "api",
    "app",
    "auth",
    "conns",
    "guard",
    "health",
    "hooks",
    "parseerrors",
]
