"""Tests of the scale-out services (`make test-services`, outside `make test`): real servers
started by the tests on 127.0.0.1 and torn down after."""

from support.postgres import postgres_cluster  # noqa: F401  (the session's PostgreSQL cluster)
