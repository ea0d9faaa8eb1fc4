"""The Team Vault REST API: the only folder that imports ``requests`` and ``urllib3``.

Nothing is imported here: ``requests`` is loaded by the first tool call, not at start-up.
"""
