#!/usr/bin/env python3
"""Sanity checks, length figures and a BM25 baseline for the docs-qa sets (standard library only).

Usage:  python3 check.py [SETDIR ...]     (default: every set folder beside this file)

Checks: ids unique, no empty texts, every qrel points to an existing query and doc.
Prints 3 random query/answer pairs and BM25 (k1=0.9, b=0.4, title+text, lower-cased
\\w+ tokens, no stemming or stop words) MRR@10 and Recall@10/100.
"""

import collections
import json
import math
import os
import random
import re
import sys

TOK = re.compile(r"\w+")


def load(d):
    with open(os.path.join(d, "corpus.jsonl"), encoding="utf-8") as f:
        corpus = [json.loads(line) for line in f]
    with open(os.path.join(d, "queries.jsonl"), encoding="utf-8") as f:
        queries = [json.loads(line) for line in f]
    qrels = collections.defaultdict(dict)
    with open(os.path.join(d, "qrels.tsv"), encoding="utf-8") as f:
        assert next(f).rstrip("\n") == "query-id\tcorpus-id\tscore"
        for line in f:
            q, c, s = line.rstrip("\n").split("\t")
            qrels[q][c] = int(s)
    return corpus, queries, qrels


def check(corpus, queries, qrels):
    cid = [d["_id"] for d in corpus]
    qid = [q["_id"] for q in queries]
    assert len(set(cid)) == len(cid), "duplicate corpus ids"
    assert len(set(qid)) == len(qid), "duplicate query ids"
    assert all(d["text"].strip() and d["title"].strip() for d in corpus), "empty doc text/title"
    assert all(q["text"].strip() for q in queries), "empty query text"
    cs, qs = set(cid), set(qid)
    for q, rel in qrels.items():
        assert q in qs, "qrel for unknown query %s" % q
        for c, s in rel.items():
            assert c in cs, "qrel to unknown doc %s" % c
            assert s == 1
    assert set(qrels) == qs, "query without qrel"
    n_ans = sum(1 for d in corpus if not d["distractor"])
    assert n_ans == sum(len(r) for r in qrels.values()), "answers vs qrels mismatch"


def bm25_eval(corpus, queries, qrels, k1=0.9, b=0.4):
    docs = [TOK.findall((d["title"] + " " + d["text"]).lower()) for d in corpus]
    N = len(docs)
    avgdl = sum(map(len, docs)) / N
    postings = collections.defaultdict(list)
    for i, toks in enumerate(docs):
        for t, tf in collections.Counter(toks).items():
            postings[t].append((i, tf))
    idf = {t: math.log(1 + (N - len(p) + 0.5) / (len(p) + 0.5)) for t, p in postings.items()}
    norm = [k1 * (1 - b + b * len(t) / avgdl) for t in docs]
    mrr = r10 = r100 = 0.0
    for q in queries:
        scores = collections.defaultdict(float)
        for t in TOK.findall(q["text"].lower()):
            for i, tf in postings.get(t, ()):
                scores[i] += idf[t] * tf * (k1 + 1) / (tf + norm[i])
        ranked = [corpus[i]["_id"] for i, _ in sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:100]]
        rel = qrels[q["_id"]]
        for r, c in enumerate(ranked[:10]):
            if c in rel:
                mrr += 1 / (r + 1)
                break
        r10 += len(rel.keys() & set(ranked[:10])) / len(rel)
        r100 += len(rel.keys() & set(ranked)) / len(rel)
    n = len(queries)
    return mrr / n, r10 / n, r100 / n


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = sys.argv[1:] or sorted(
        os.path.join(here, d) for d in os.listdir(here) if os.path.isfile(os.path.join(here, d, "corpus.jsonl"))
    )
    for d in dirs:
        corpus, queries, qrels = load(d)
        check(corpus, queries, qrels)
        n_d = sum(1 for x in corpus if x["distractor"])
        print(
            "== %s: %d queries, %d docs (%d answers, %d distractors), %d qrels: checks OK"
            % (
                os.path.basename(d),
                len(queries),
                len(corpus),
                len(corpus) - n_d,
                n_d,
                sum(len(r) for r in qrels.values()),
            )
        )
        ans = sorted(len(x["text"]) for x in corpus if not x["distractor"])
        dis = sorted(len(x["text"]) for x in corpus if x["distractor"])
        print(
            "  answers %d-%d chars (median %d); distractors %d-%d (median %d); corpus.jsonl %.2f MB"
            % (
                ans[0],
                ans[-1],
                ans[len(ans) // 2],
                dis[0],
                dis[-1],
                dis[len(dis) // 2],
                os.path.getsize(os.path.join(d, "corpus.jsonl")) / 1e6,
            )
        )
        byid = {x["_id"]: x for x in corpus}
        for q in random.Random(0).sample(queries, 3):
            a = byid[next(iter(qrels[q["_id"]]))]
            print("  Q: %s\n  A: %s" % (q["text"][:100], a["text"][:100].replace("\n", " ")))
        mrr, r10, r100 = bm25_eval(corpus, queries, qrels)
        print("  BM25 MRR@10 %.3f  Recall@10 %.3f  Recall@100 %.3f" % (mrr, r10, r100))


if __name__ == "__main__":
    main()
