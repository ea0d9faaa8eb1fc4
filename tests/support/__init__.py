"""What the tests share: fakes, the fast retry policy, sessions on a local vault, seeding, environments,
child processes, racing agents over stdio, a scripted loopback server, waiting without depending on the
machine's speed, and the network guard that ``conftest.py`` registers. Nothing is imported here; a test
imports the module it needs.
"""
