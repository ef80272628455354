"""Random subjects and filters over a few tokens, for the differential tests of the subject tries
(`protocol.gsl`, the store's cached filter matches, a consumer's `SubjectFilter`): few tokens, so
that filters and subjects meet often."""

from __future__ import annotations

import random

TOKENS = ["a", "b", "c", "dd"]


def random_subject(rng: random.Random, wild: float = 0.0) -> str:
    """A literal subject of 1-4 tokens; with probability ``wild`` one token is ``*`` or ``>``
    (a subscription's subject, matched as nats-server matches one)."""
    tokens = [rng.choice(TOKENS) for _ in range(rng.randint(1, 4))]
    if rng.random() < wild:
        tokens[rng.randrange(len(tokens))] = rng.choice(["*", ">"])
    return ".".join(tokens)


def random_filter(rng: random.Random) -> str:
    """A valid filter of 1-4 tokens: literal ones and ``*``, a last ``>`` now and then."""
    tokens = [rng.choice([*TOKENS, "*", "*"]) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.3:
        tokens[-1] = ">"
    return ".".join(tokens)
