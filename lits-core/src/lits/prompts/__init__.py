"""Prompt registry and the core's default prompts."""
