"""A pull request's body is decoded once per distinct body (`pull_delivery._decoded`): the same
body gives the same (shared, read-only) request, a bad body is refused every time, and a large
body is not kept."""

from __future__ import annotations

import pytest

from pyjetstream.api.codec import PullRequestError
from pyjetstream.server.jetstream import pull_delivery


def test_the_same_body_is_decoded_once_and_bad_ones_every_time() -> None:
    body = b'{"batch":3,"expires":5000000000}'
    req, is_json = pull_delivery._decoded(body)
    assert (req.batch, req.expires, is_json) == (3, 5_000_000_000, True)
    assert pull_delivery._decoded(body)[0] is req
    assert pull_delivery._decoded(b" 7 ")[0].batch == 7 and not pull_delivery._decoded(b" 7 ")[1]
    for _ in range(2):
        with pytest.raises(PullRequestError):
            pull_delivery._decoded(b'{"batch":"x"}')
    assert b'{"batch":"x"}' not in pull_delivery._DECODED
    padded = b'{"batch":2,"pad":"' + b"x" * 1000 + b'"}'
    assert pull_delivery._decoded(padded)[0].batch == 2
    assert padded not in pull_delivery._DECODED
