"""Helpers for tests that start servers on loopback."""

import random
import socket

from sweeps.cluster.slurm_node import STRIPES, port_window

# The shares of the port window that the Slurm tests' nodes (nodes 0 and 1 of a job) pick from; the tests'
# own servers take theirs from the other six.
SLURM_SHARES = 2
_given: set[int] = set()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, and that no bind to port 0 can take before
    the server the test starts binds it (a Ray node's agent lost its port so while other Rays were starting,
    and the node never came up): picked at random where Slurm nodes pick theirs (sweeps.cluster.slurm_node:
    between Ray's worker ports and the kernel's ephemeral range), outside the test nodes' shares; never one
    given before in this process."""
    window = port_window()
    ours = [p for p in window if (p - window.start) % STRIPES >= SLURM_SHARES]
    for port in random.sample(ours, len(ours)):
        if port in _given:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _given.add(port)
        return port
    with socket.socket() as s:  # no window on this host (a narrow ip_local_port_range): the kernel's choice
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
