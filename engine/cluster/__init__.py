"""Cluster mode: several nodes on one PostgreSQL share monitors and runs through leases."""

from ._keeper import ClusterSettings, LeaseKeeper, LocalWork

__all__ = ["ClusterSettings", "LeaseKeeper", "LocalWork"]
