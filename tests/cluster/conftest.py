"""The cluster tests' fixtures: a single-node SLURM cluster and a PostgreSQL cluster, one each
per session (``make test-cluster``; never collected by ``make test``)."""

from support.postgres import postgres_cluster  # noqa: F401 (a session fixture)
from support.slurm import slurm_cluster  # noqa: F401 (a session fixture)
