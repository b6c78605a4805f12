"""Cluster mode: several nodes on one PostgreSQL share monitors and runs through leases."""

from ._codec import CODEC, CommandRefused, RemoteCommand, decode_command, encode_command
from ._keeper import ClusterSettings, LeaseKeeper, LocalWork

__all__ = [
    "CODEC",
    "ClusterSettings",
    "CommandRefused",
    "LeaseKeeper",
    "LocalWork",
    "RemoteCommand",
    "decode_command",
    "encode_command",
]
