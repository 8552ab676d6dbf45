#!/usr/bin/env python3
"""Validate crates/policy/data/catalog.json and browser-uas.txt.

Run from anywhere: `python3 crates/policy/data/check_catalog.py`.
Exit status 0 when everything holds, 1 otherwise (every problem is printed).

Checks:
  * catalog.json is a JSON array of objects with exactly the fields of
    `crawlgate_policy::catalog::Entry` (deny_unknown_fields);
  * tokens match ^[A-Za-z0-9._-]+$ (RFC 9309's letters, '_' and '-', plus
    the digits and dots crawlers really send), are unique case-insensitively and sorted
    case-insensitively;
  * categories are non-empty, unique, from the vocabulary;
  * operators are clean text (no markdown, no URL);
  * robots-only entries (ua_visible = false) carry no example_ua;
  * identification (the rule of crates/policy/src/identify.rs: every catalog
    token found as a whole word, ASCII case-insensitively, a boundary being the
    start, the end or any character outside [A-Za-z0-9]; the longest token
    wins, ties go to the earliest): every example_ua identifies its own token,
    "<token>/1.0" identifies its own token, and no line of browser-uas.txt
    identifies any token;
  * every name of the ai.robots.txt snapshot (if present at
    /work/shared/data/ai-robots-txt/robots.json or $AI_ROBOTS_JSON) is in the
    catalog (case-insensitively) or listed with a reason in README.md.
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CATEGORIES = [
    "ai-training", "ai-search", "ai-assistant", "search-engine", "seo",
    "archiver", "scraper", "social-preview", "monitoring",
]
FIELDS_REQUIRED = {"token", "operator", "categories", "ua_visible"}
FIELDS_OPTIONAL = {"url", "example_ua"}
TOKEN_RE = re.compile(r"^[A-Za-z0-9._-]+$")

problems = []


def problem(msg):
    problems.append(msg)


class Matcher:
    """Python mirror of identify::TokenMatcher."""

    def __init__(self, tokens):
        self.tokens = tokens
        # A lookahead makes the search overlapping, like the Aho-Corasick
        # automaton's find_overlapping_iter. re.ASCII keeps the case folding
        # ASCII-only (no Kelvin sign matching "k").
        self.res = [
            re.compile(r"(?=(?<![A-Za-z0-9])(" + re.escape(t) + r")(?![A-Za-z0-9]))", re.IGNORECASE | re.ASCII)
            for t in tokens
        ]

    def find_all(self, ua):
        """Every (token index, start) found as a whole word."""
        return [(i, m.start(1)) for i, r in enumerate(self.res) for m in r.finditer(ua)]

    def find(self, ua):
        best = None
        for i, s in self.find_all(ua):
            if best is None:
                best = (i, s)
                continue
            bi, bs = best
            li, lb = len(self.tokens[i]), len(self.tokens[bi])
            if li > lb or (li == lb and s < bs):
                best = (i, s)
        return None if best is None else best[0]


def main():
    with open(os.path.join(HERE, "catalog.json"), encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, list) or not data:
        problem("catalog.json: not a non-empty JSON array")
        return report(data if isinstance(data, list) else [])

    seen = {}
    for n, e in enumerate(data):
        where = f"entry {n}"
        if not isinstance(e, dict):
            problem(f"{where}: not an object")
            continue
        tok = e.get("token")
        where = f"entry {n} ({tok!r})"
        keys = set(e)
        if not FIELDS_REQUIRED <= keys:
            problem(f"{where}: missing {sorted(FIELDS_REQUIRED - keys)}")
        if keys - FIELDS_REQUIRED - FIELDS_OPTIONAL:
            problem(f"{where}: unknown fields {sorted(keys - FIELDS_REQUIRED - FIELDS_OPTIONAL)}")
        if not isinstance(tok, str) or not TOKEN_RE.match(tok):
            problem(f"{where}: token does not match ^[A-Za-z0-9._-]+$")
            continue
        low = tok.lower()
        if low in seen:
            problem(f"{where}: duplicate token (case-insensitive) of entry {seen[low]}")
        seen[low] = n
        op = e.get("operator")
        if not isinstance(op, str) or not op.strip() or op != op.strip():
            problem(f"{where}: operator must be non-empty trimmed text")
        elif re.search(r"[\[\]]|\]\(|https?://", op):
            problem(f"{where}: operator contains markdown or a URL: {op!r}")
        cats = e.get("categories")
        if not isinstance(cats, list) or not cats:
            problem(f"{where}: categories must be a non-empty list")
        else:
            for c in cats:
                if c not in CATEGORIES:
                    problem(f"{where}: unknown category {c!r}")
            if len(set(cats)) != len(cats):
                problem(f"{where}: repeated category")
        if not isinstance(e.get("ua_visible"), bool):
            problem(f"{where}: ua_visible must be a boolean")
        if "url" in e and not (isinstance(e["url"], str) and re.match(r"^https?://\S+$", e["url"])):
            problem(f"{where}: url must be an absolute http(s) URL")
        if "example_ua" in e:
            ua = e["example_ua"]
            if not isinstance(ua, str) or not ua or ua != ua.strip() or any(ord(ch) < 0x20 for ch in ua):
                problem(f"{where}: example_ua must be a non-empty single-line string")
            if e.get("ua_visible") is False:
                problem(f"{where}: robots-only entry (ua_visible=false) has an example_ua")

    tokens = [e["token"] for e in data if isinstance(e, dict) and isinstance(e.get("token"), str)]
    keys = [t.lower() for t in tokens]
    if keys != sorted(keys):
        problem("catalog.json: entries are not sorted by token case-insensitively")

    m = Matcher(tokens)
    for e in data:
        tok = e["token"]
        ua = e.get("example_ua")
        if ua:
            got = m.find(ua)
            if got is None or tokens[got] != tok:
                others = sorted({tokens[i] for i, _ in m.find_all(ua)})
                problem(f"{tok}: example_ua identifies {tokens[got] if got is not None else None!r} (found {others})")
            elif any(len(tokens[i]) > len(tok) for i, _ in m.find_all(ua)):
                problem(f"{tok}: example_ua contains a longer catalog token")
        got = m.find(tok + "/1.0")
        if got is None or tokens[got] != tok:
            problem(f"{tok}: '{tok}/1.0' does not identify its own token")

    n_browsers = 0
    with open(os.path.join(HERE, "browser-uas.txt"), encoding="utf-8") as f:
        for ln, line in enumerate(f, 1):
            ua = line.rstrip("\n")
            if not ua.strip():
                problem(f"browser-uas.txt:{ln}: empty line")
                continue
            n_browsers += 1
            hits = sorted({tokens[i] for i, _ in m.find_all(ua)})
            if hits:
                problem(f"browser-uas.txt:{ln}: {ua!r} contains catalog tokens {hits}")

    check_ai_robots(keys)
    return report(data, n_browsers)


def check_ai_robots(keys):
    path = os.environ.get("AI_ROBOTS_JSON", "/work/shared/data/ai-robots-txt/robots.json")
    if not os.path.exists(path):
        print(f"note: {path} not found, ai.robots.txt coverage not checked")
        return
    with open(path, encoding="utf-8") as f:
        names = list(json.load(f))
    readme_path = os.path.join(HERE, "README.md")
    readme = open(readme_path, encoding="utf-8").read() if os.path.exists(readme_path) else ""
    missing = [n for n in names if n.lower() not in keys and f"`{n}`" not in readme]
    for n in missing:
        problem(f"ai.robots.txt name {n!r} is neither in the catalog nor listed (as `{n}`) in README.md")
    covered = sum(1 for n in names if n.lower() in keys)
    print(f"ai.robots.txt: {len(names)} names, {covered} in the catalog, {len(names) - covered} listed as skipped/merged in README.md")


def report(data, n_browsers=0):
    counts = {c: 0 for c in CATEGORIES}
    for e in data:
        if isinstance(e, dict):
            for c in e.get("categories") or []:
                if c in counts:
                    counts[c] += 1
    print(f"catalog.json: {len(data)} entries")
    print("per category: " + ", ".join(f"{c}={counts[c]}" for c in CATEGORIES))
    robots_only = [e["token"] for e in data if isinstance(e, dict) and e.get("ua_visible") is False]
    print(f"robots-only: {', '.join(robots_only)}")
    print(f"with example_ua: {sum(1 for e in data if isinstance(e, dict) and 'example_ua' in e)}; with url: {sum(1 for e in data if isinstance(e, dict) and 'url' in e)}")
    print(f"browser-uas.txt: {n_browsers} user agents")
    if problems:
        print(f"FAILED: {len(problems)} problem(s)")
        for p in problems:
            print("  - " + p)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
