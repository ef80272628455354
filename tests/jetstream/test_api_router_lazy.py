"""The API router imports some handler modules at their first request (`LAZY_HANDLERS`: a
server start imports only what it uses): the endpoints it lists for each are those the module
serves, and no other module serves them."""

from __future__ import annotations

import importlib

from pyjetstream.server.jetstream.api_router import LAZY_HANDLERS, _handlers


def test_lazy_handler_lists_match_their_modules() -> None:
    eager = _handlers()
    for module, endpoints in LAZY_HANDLERS.items():
        served = importlib.import_module(module).HANDLERS
        assert set(endpoints) == set(served), module
        assert not set(endpoints) & set(eager), module
