"""The suite's ``xdist_group`` marks must hold: they keep the Spark tests on one SparkSession and the
3-node cluster tests from running two clusters at once on CI's 2 cores.

pytest-xdist's ``--dist loadgroup`` sends tests to workers by a ``@group`` suffix it adds to their node
ids; pytest 9.2 keeps node ids elsewhere, so with pytest-xdist 3.8 the suffix (and the grouping) was
lost without a word and two cluster tests timed out in CI. pyproject pins pytest below 9.2; this test
fails if a later pair of versions loses the grouping again.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.xdist_group("canary")


def test_xdist_groups_reach_the_scheduler(request: pytest.FixtureRequest) -> None:
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not running under pytest-xdist --dist loadgroup")
    assert request.node.nodeid.endswith("@canary"), (
        f"pytest {pytest.__version__} with this pytest-xdist does not group xdist_group tests "
        f"(node id {request.node.nodeid!r} has no @canary suffix)"
    )
