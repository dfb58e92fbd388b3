"""Named features over HTTP (issue 24): prints the named-feature table of docs/service.md.

Decide+reward pairs per second, decide latency and the server's CPU time per pair, at K=100
candidates, for three bodies of the same decisions on the same served policy:

* ``dense json``: the (K, d) contexts as JSON numbers (bench_service.py's body), d the width
  of the schema below;
* ``named, action_ids``: a user of 30 named features and the ids of K actions of the
  service's catalogue (put before the warm-up, so before the clock starts);
* ``named, inline``: the same user with the K actions' features in the request.

The schema (a news site): the user has 20 numbers (age, activity counts, ...), 6
categories (country, device, language, plan, referrer, daypart; one-hot with an "<other>"
column), 2 booleans and 2 lists (segments, followed topics; multi-hot); an article has its
topic, publisher, age in hours and a video flag. The interactions are the user's device and
followed topics with the article's topic (Vowpal Wabbit's ``-q`` on a few fields, not the
whole context × action product, which would give d in the thousands); an intercept and the
unit-ball factor. It is fitted offline on synthetic users and the catalogue, and the
service's config declares it (``features_table``). 64 bodies of each kind are built before
the clock starts (random users, the K ids in a random order).

The load generator, the server start, the warm-up and the measurements are
bench_service.py's (``http_run``): asyncio clients on one keep-alive connection each, in a
process of their own, on the same cores as the server; SQLite log, synchronous=FULL.
``--repeat N`` measures the three bodies N times, interleaved (dense, ids, inline, dense,
...; a fresh server each), then prints the medians. ``--profile`` adds a cProfile of the
server under the named load (bench_service.py's profiled serve).

Run:  PYTHONPATH=src python benchmarks/bench_service_named.py [--seconds 5] [--clients 16]
          [--served linucb] [--repeat 3] [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_service  # noqa: E402  (the load generator, the server start, the measurements)

from glmbandits.features import (Boolean, Categorical, FeatureSchema,  # noqa: E402
                                 MultiCategorical, Numeric)
from glmbandits.service.config_features import features_table  # noqa: E402

K = 100
#: (name, mean, sd) of the user's 20 numbers (synthetic, of a plausible size).
NUMBERS = [("age", 38, 12), ("tenure_days", 400, 300), ("sessions_7d", 5, 3),
           ("sessions_30d", 18, 10), ("articles_7d", 12, 8), ("minutes_7d", 45, 30),
           ("comments_30d", 1, 1), ("shares_30d", 2, 2), ("days_since_visit", 3, 3),
           ("hour", 13, 5), ("weekday", 3, 2), ("scroll_depth", 0.6, 0.2),
           ("ctr_30d", 0.08, 0.05), ("newsletters", 1, 1), ("paywall_hits_30d", 2, 2),
           ("push_opens_30d", 4, 4), ("video_share", 0.2, 0.15), ("searches_7d", 2, 2),
           ("avg_read_s", 70, 40), ("bounce_rate", 0.4, 0.2)]
CATEGORIES = {"country": ["DE", "FR", "US", "GB", "ES", "IT"],
              "device": ["ios", "android", "web"],
              "language": ["de", "fr", "en", "es"],
              "plan": ["free", "trial", "premium"],
              "referrer": ["search", "social", "direct", "newsletter"],
              "daypart": ["morning", "noon", "evening", "night"]}
FLAGS = ["logged_in", "notifications"]
TOPICS = ["politics", "economy", "sport", "tech", "culture", "science"]
SEGMENTS = ["commuter", "parent", "student", "investor", "gamer", "traveller", "foodie",
            "runner"]
PUBLISHERS = [f"pub{i}.example" for i in range(8)]


def make_schema() -> FeatureSchema:
    """The news schema (30 context features, 4 action features, 2 interactions)."""
    context = ([Numeric(name, scale="fit") for name, _, _ in NUMBERS]
               + [Categorical(name, vocabulary="fit") for name in CATEGORIES]
               + [Boolean(name) for name in FLAGS]
               + [MultiCategorical("segments", vocabulary="fit", unseen="zero"),
                  MultiCategorical("followed_topics", vocabulary="fit", unseen="zero")])
    action = [Categorical("topic", vocabulary="fit", unseen="zero"),
              Categorical("publisher", vocabulary="fit"),
              Numeric("age_hours", scale="fit"), Boolean("video")]
    return FeatureSchema(context=context, action=action,
                         interactions=[("device", "topic"), ("followed_topics", "topic")])


def random_user(rng: np.random.Generator) -> dict[str, Any]:
    user: dict[str, Any] = {name: round(float(max(0.0, rng.normal(mean, sd))), 3)
                            for name, mean, sd in NUMBERS}
    user.update({name: str(rng.choice(values)) for name, values in CATEGORIES.items()})
    user.update({name: bool(rng.random() < 0.5) for name in FLAGS})
    user["segments"] = [str(s) for s in rng.choice(SEGMENTS, rng.integers(4), replace=False)]
    user["followed_topics"] = [str(t) for t in rng.choice(TOPICS, rng.integers(4),
                                                          replace=False)]
    return user


def catalogue(rng: np.random.Generator) -> dict[str, dict[str, Any]]:
    """K articles by id."""
    return {f"art-{i:03d}": {"topic": str(rng.choice(TOPICS)),
                             "publisher": str(rng.choice(PUBLISHERS)),
                             "age_hours": round(float(rng.exponential(12.0)), 1),
                             "video": bool(rng.random() < 0.2)} for i in range(K)}


def fitted_schema(articles: dict[str, dict[str, Any]]) -> FeatureSchema:
    rng = np.random.default_rng(7)
    users = [random_user(rng) for _ in range(2000)]
    return make_schema().fit(users, list(articles.values()))


def named_bodies(articles: dict[str, dict[str, Any]], inline: bool,
                 count: int = 64) -> list[tuple[bytes, bytes]]:
    """``count`` (prefix, suffix) bodies around the decision id (bench_service's form)."""
    rng = np.random.default_rng(1)
    out = []
    for _ in range(count):
        ids = [str(i) for i in rng.permutation(list(articles))]
        body: dict[str, Any] = {"context": random_user(rng)}
        if inline:
            body["actions"] = [{"id": i, "features": articles[i]} for i in ids]
        else:
            body["action_ids"] = ids
        rest = json.dumps(body, separators=(",", ":"))
        out.append((b'{"decision_id":"', b'",' + rest[1:].encode()))
    return out


def named_config(folder: Path, schema: FeatureSchema, served: str) -> Path:
    """bench_service's config at K, d with the schema's ``[features]`` table."""
    dense = bench_service.write_config(folder, K, schema.n_features_out_, served)
    path = folder / f"named-{dense.name}"
    path.write_text(dense.read_text() + "\n" + features_table(schema))
    return path


def put_catalogue(articles: dict[str, dict[str, Any]]):
    """``prepare(port)`` for ``http_run``: PUT every article."""
    def prepare(port: int) -> None:
        for action_id, features in articles.items():
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/actions/{action_id}", method="PUT",
                data=json.dumps({"features": features}).encode(),
                headers={"Authorization": f"Bearer {bench_service.KEY}",
                         "Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=60) as answer:
                assert answer.status in (200, 201), answer.status
    return prepare


#: Profile groups for named bodies, before bench_service's.
NAMED_GROUPS = [("featurise: schema.transform and the named body's checks",
                 ("glmbandits/features", "named_body", "named_operations",
                  "service/catalogue")),
                ("stdlib json (the request text the log keeps)", ("json/",))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--served", default="linucb", help="NAME[:PARAM=VALUE,...]")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bodies", nargs="+", default=["dense", "ids", "inline"],
                        choices=["dense", "ids", "inline"])
    parser.add_argument("--profile", action="store_true",
                        help="then a cProfile of the server under the action_ids load")
    args = parser.parse_args()
    articles = catalogue(np.random.default_rng(3))
    schema = fitted_schema(articles)
    d = schema.n_features_out_
    label = {"dense": "dense json", "ids": "named, action_ids", "inline": "named, inline"}
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        config = named_config(folder, schema, args.served)
        runs = {"dense": {}, "ids": {"config": config, "prepare": put_catalogue(articles),
                                     "bodies": named_bodies(articles, inline=False)},
                "inline": {"config": config, "bodies": named_bodies(articles, inline=True)}}
        sizes = {kind: np.median([len(p) + len(s) for p, s in
                                  runs[kind].get("bodies") or bench_service.bodies_for(
                                      K, d, "json")]) for kind in args.bodies}
        print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
              f"Python {platform.python_version()}, {platform.system()} {platform.release()}")
        print(f"schema: {len(schema.context)} context features, {len(schema.action)} action "
              f"features, interactions {[list(p) for p in schema.interactions]}, d = {d}")
        print("median body bytes (without the decision id): " + ", ".join(
            f"{label[kind]} {sizes[kind]:,.0f}" for kind in args.bodies))
        print(f"\n## Over HTTP, K={K}, d={d}, {args.clients} clients, {args.served}, SQLite log "
              f"(synchronous={bench_service.SYNCHRONOUS}); decide latency in ms; CPU: ms per "
              "pair\n")
        header, rule = bench_service.COLUMNS.split("\n")
        print(f"| run {header}\n|---:{rule}")
        results: dict[str, list[dict]] = {kind: [] for kind in args.bodies}
        for run in range(1, args.repeat + 1):
            for kind in args.bodies:
                r = bench_service.http_run(folder, K, d, args.clients, args.seconds,
                                           args.served, "json", **runs[kind])
                results[kind].append(r)
                print(f"| {run} " + bench_service._row(args.served, K, d, label[kind],
                                                       args.clients, r), flush=True)
        print(f"\n## Medians of the {args.repeat} runs above\n")
        print(bench_service.COLUMNS)
        for kind, measured in results.items():
            median = {key: float(np.median([r[key] for r in measured])) for key in
                      ("pairs/s", "p50", "p99", "p99.9", "group", "server ms/pair",
                       "client ms/pair")}
            print(bench_service._row(args.served, K, d, label[kind], args.clients, median))
        if args.profile:
            profile = str(folder / "server-named.prof")
            bench_service.http_run(folder, K, d, args.clients, args.seconds, args.served,
                                   "json", profile=profile, **runs["ids"])
            groups = NAMED_GROUPS + bench_service.GROUPS
            print(f"\n## Server profile under the action_ids load ({args.served}, "
                  f"{args.clients} clients): event loop thread\n")
            print(bench_service.profile_summary(profile + ".main", groups=groups))
            print("\n## ... and the core's worker thread\n")
            print(bench_service.profile_summary(profile + ".worker", top=16, groups=groups))


if __name__ == "__main__":
    main()
