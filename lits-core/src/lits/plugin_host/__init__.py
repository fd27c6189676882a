"""The host side of plugins: the hooks a plugin may implement (:mod:`.hookspecs`), finding, probing and
loading them (:mod:`.plugins`, :mod:`.plugin_probe`), and the one store every registration lands in
(:mod:`.store`).  The seeds' decorators and lookups above it stay :mod:`lits.registry`.
"""
