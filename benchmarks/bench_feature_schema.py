"""CPU time of ``FeatureSchema.transform`` per request, against the same matrix built by hand.

A request is one context of 30 named features of mixed kinds (16 numbers, 6 booleans, 4
categories one-hot over fitted vocabularies, one hashed category, 2 lists of categories
multi-hot, one 4-vector) and K candidate actions with their own features (a topic one-hot,
a price), with the context × action interaction (Vowpal Wabbit's ``-q``), an intercept and
the unit-ball factor. "by hand" builds the same (K, d) matrix from the same dicts with
plain numpy, the way a client would (the dict lookups, the one-hot rows, ``np.hstack``
and an outer product, a new array per request, no input checks); the two agree to 1e-12
(checked before timing). "encoded once" is what a service's action catalogue does: each
action's own columns encoded when it is put (``FeatureSchema.encode_actions``, not timed),
then per request only the context parsed (``transform_encoded``, the same matrix bit for
bit). Each method runs blocks of ``--block`` requests, interleaved (schema, encoded once, by
hand, schema, ...); the table shows the median over ``--repeats`` blocks of CPU time per
request (``time.process_time``) and the ratios measured in the same run.

Run from the repository root::

    python benchmarks/bench_feature_schema.py [--k 1 10 100] [--block 200] [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from glmbandits.features import (Boolean, Categorical, FeatureSchema, MultiCategorical, Numeric,
                                 Vector, stable_hash)

NUMBERS = [f"n{i}" for i in range(16)]
FLAGS = [f"b{i}" for i in range(6)]
CATEGORIES = {f"c{i}": [f"v{j}" for j in range(3)] for i in range(4)}
LISTS = {f"m{i}": [f"s{j}" for j in range(4)] for i in range(2)}
TOPICS = ["news", "sports", "tech", "food"]
BUCKETS = 8


def make_schema() -> FeatureSchema:
    context = ([Numeric(n, scale="fit") for n in NUMBERS] + [Boolean(b) for b in FLAGS]
               + [Categorical(c, vocabulary="fit") for c in CATEGORIES]
               + [Categorical("url", buckets=BUCKETS)]
               + [MultiCategorical(m, vocabulary="fit") for m in LISTS]
               + [Vector("emb", length=4)])
    return FeatureSchema(context=context, action=[Categorical("topic", vocabulary="fit"),
                                                  Numeric("price")],
                         interactions=[("context", "action")])


def random_user(rng: np.random.Generator) -> dict[str, Any]:
    user: dict[str, Any] = {n: float(rng.normal(3.0, 2.0)) for n in NUMBERS}
    user.update({b: bool(rng.random() < 0.5) for b in FLAGS})
    user.update({c: str(rng.choice(v + ["new"])) for c, v in CATEGORIES.items()})
    user["url"] = f"example.org/{rng.integers(1000)}"
    user.update({m: [str(s) for s in rng.choice(v, size=rng.integers(3), replace=False)]
                 for m, v in LISTS.items()})
    user["emb"] = rng.normal(size=4).tolist()
    return user


def random_items(rng: np.random.Generator, k: int) -> list[dict[str, Any]]:
    return [{"topic": str(rng.choice(TOPICS)), "price": float(rng.random())} for _ in range(k)]


class ByHand:
    """The same matrix, written out with numpy (the fitted numbers taken from the schema)."""

    def __init__(self, schema: FeatureSchema) -> None:
        fields = {f.name: f for f in schema.context + schema.action}
        self.scale = {n: (fields[n].mean_, fields[n].scale_) for n in NUMBERS}
        self.index = {c: {v: j for j, v in enumerate(fields[c].vocabulary_)}
                      for c in (*CATEGORIES, *LISTS, "topic")}
        self.bound = schema.norm_bound_

    def one_hot(self, name: str, value: Any) -> np.ndarray:
        row = np.zeros(len(self.index[name]) + 1)
        row[self.index[name].get(value, len(self.index[name]))] = 1.0
        return row

    def __call__(self, user: dict[str, Any], items: list[dict[str, Any]]) -> np.ndarray:
        parts = [np.array([(user[n] - self.scale[n][0]) / self.scale[n][1] for n in NUMBERS]),
                 np.array([float(user[b]) for b in FLAGS])]
        parts += [self.one_hot(c, user[c]) for c in CATEGORIES]
        url = np.zeros(BUCKETS)
        url[stable_hash("url", user["url"]) % BUCKETS] = 1.0
        parts.append(url)
        for m in LISTS:
            row = np.zeros(len(self.index[m]) + 1)
            for s in user[m]:
                row[self.index[m].get(s, len(self.index[m]))] = 1.0
            parts.append(row)
        parts.append(np.asarray(user["emb"], dtype=float))
        z = np.concatenate(parts)
        K = len(items)
        topics = self.index["topic"]
        V = np.zeros((K, len(topics) + 2))
        V[np.arange(K), [topics.get(i["topic"], len(topics)) for i in items]] = 1.0
        V[:, -1] = [i["price"] for i in items]
        X = np.hstack([np.tile(z, (K, 1)), V, (z[None, :, None] * V[:, None, :]).reshape(K, -1),
                       np.ones((K, 1))])
        return X / self.bound


def block(build: Any, requests: list[tuple[dict, list]]) -> float:
    start = time.process_time()
    for user, items in requests:
        build(user, items)
    return (time.process_time() - start) / len(requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[1, 10, 100], help="actions")
    parser.add_argument("--block", type=int, default=200, help="requests per timed block")
    parser.add_argument("--repeats", type=int, default=15, help="blocks per method")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    schema = make_schema().fit([random_user(rng) for _ in range(500)],
                               [{"topic": t, "price": p} for t in TOPICS for p in (0.0, 1.0)])
    hand = ByHand(schema)
    print(f"d = {schema.n_features_out_} columns (30 context features, 2 action features, "
          f"context x action), CPU microseconds per request, median of {args.repeats} "
          f"interleaved blocks of {args.block}")
    print("| K | schema.transform | encoded once (catalogue) | by hand (numpy) | "
          "schema / by hand | encoded / by hand |")
    print("|---|---|---|---|---|---|")
    for k in args.k:
        requests = [(random_user(rng), random_items(rng, k)) for _ in range(args.block)]
        encoded = [(user, schema.encode_actions(items)) for user, items in requests]
        for (user, items), (_, rows) in zip(requests[:5], encoded):
            np.testing.assert_allclose(schema.transform(user, items), hand(user, items),
                                       rtol=1e-12, atol=1e-12)
            expected = schema.transform(user, items).copy()
            assert schema.transform_encoded(user, rows).tobytes() == expected.tobytes()
        times: dict[str, list[float]] = {"schema": [], "encoded": [], "hand": []}
        for _ in range(args.repeats):
            times["schema"].append(block(schema.transform, requests))
            times["encoded"].append(block(schema.transform_encoded, encoded))
            times["hand"].append(block(hand, requests))
        s, e, h = (statistics.median(times[m]) * 1e6 for m in ("schema", "encoded", "hand"))
        print(f"| {k} | {s:.1f} | {e:.1f} | {h:.1f} | {s / h:.2f} | {e / h:.2f} |")


if __name__ == "__main__":
    main()
