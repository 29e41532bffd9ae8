"""Hostile input for the frontier: the cases and the surfaces they are fed to."""
