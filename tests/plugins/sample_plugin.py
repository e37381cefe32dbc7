"""A plugin as a user would write one: a monoid and a policy, registered by name."""

from mta.monoid import Monoid


class Product(Monoid):
    """Product of the values (associative, commutative)."""

    identity = 1.0
    commutative = True

    @staticmethod
    def combine(a: float, b: float) -> float:
        return a * b

    def lift(self, value: float) -> float:
        return float(value)


def register(registry) -> None:
    registry.add_monoid("product", Product)
    # keep the newest `n` updates, written as a user would, over counts
    registry.add_policy("newest", lambda n: lambda total, old: total.count - old.count >= n, n=(int, 3))
