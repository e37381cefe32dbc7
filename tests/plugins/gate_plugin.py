"""A policy that lets a test hold a batch inside the server for as long as it wants.

``gate(path)`` keeps every update; the first time it is applied it creates
``path + ".entered"`` (the test now knows the batch is being applied) and waits until
``path`` exists (the test opens the gate). For a durable store the server applies
batches in a worker thread, so the event loop goes on serving other calls meanwhile.
"""

import os
import time


def gate(path: str):
    opened = False

    def policy(total, old) -> bool:
        nonlocal opened
        if not opened:
            open(path + ".entered", "w").close()
            while not os.path.exists(path):
                time.sleep(0.01)
            opened = True
        return False  # evict nothing

    return policy


def register(registry) -> None:
    registry.add_policy("gate", gate, path=str)
