"""The aiohttp app: the hook receiver and (from ``api``) the read API."""
