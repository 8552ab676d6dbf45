#!/usr/bin/env python3
"""Writes an nginx configuration that does the load test's crawlgate job the
way an operator would without crawlgate: proxy the origin (keep-alive pool,
X-Forwarded-For), answer 403 to the User-Agents of the catalog's blocked
categories (bench/gen-realistic-policy.py blocks `ai-training` and
`scraper`; tokens matched case-insensitively as whole words, a boundary
being any character outside [A-Za-z0-9], as crawlgate does), add the same
Robots-Tag / X-Robots-Tag / Content-Usage headers, answer /robots.txt with
`return 200` and the bytes crawlgate renders, and, on a second port, inject
the same <meta> into <head> with sub_filter (module http_sub).

    python3 bench/nginx-same-job.py TMPDIR HEADERS_LISTEN INJECT_LISTEN ORIGIN ROBOTS_TXT > nginx.conf

Only the catalog tokens that appear in User-Agent headers (`ua_visible`)
are listed: the others can never match. nginx has no robots.txt path rules,
so the 500 Disallow rules of the realistic policy are not enforced: the
blocked categories disallow `/` and allow `/public/`, which a location does.
"""
import json
import os
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
catalog = json.load(open(os.path.join(root, "crates/policy/data/catalog.json")))
tmp, hdr_listen, inj_listen, origin, robots_path = sys.argv[1:6]

ROBOTS_TAG = "noindex, nosnippet"
# Robots-Tag is a structured field (draft-illyes-aipref-robots-tag): the
# rules apply to every agent (`*`) as parameters.
ROBOTS_TAG_SF = "*;noindex;nosnippet"
CONTENT_USAGE = "train-ai=n"
META = f'<meta name="robots" content="{ROBOTS_TAG}">'
BLOCKED = {"ai-training", "scraper"}

tokens = sorted((e["token"] for e in catalog if e["ua_visible"] and e["categories"][0] in BLOCKED),
                key=lambda t: (-len(t), t.lower()))
for t in tokens:
    assert all(c.isalnum() or c in "-_" for c in t), t
# ~* is PCRE, caseless; lookarounds give crawlgate's whole-word boundary.
ua_map = "".join(f'    "~*(?<![A-Za-z0-9]){t}(?![A-Za-z0-9])" 1;\n' for t in tokens)


def nginx_string(s):
    """A double-quoted nginx string with the bytes of s: `$` cannot be
    escaped, so it comes from the variable $dollar."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("$", "${dollar}") + '"'


# nginx reads a configuration token into a 4 KiB buffer, so a 20 KB body
# cannot be one `return` string: it is split over map variables with
# constant values, concatenated by `return`.
robots = open(robots_path, encoding="utf-8").read()
parts = [robots[i:i + 1500] for i in range(0, len(robots), 1500)]
robots_vars = "".join(f'  map "" $robots_{i} {{ default {nginx_string(p)}; }}\n' for i, p in enumerate(parts))
robots_value = '"' + "".join(f"${{robots_{i}}}" for i in range(len(parts))) + '"'

page_headers = f"""      add_header Robots-Tag "{ROBOTS_TAG_SF}";
      add_header X-Robots-Tag "{ROBOTS_TAG}";
      add_header Content-Usage "{CONTENT_USAGE}";"""


def server(listen, inject):
    sub = ""
    if inject:
        sub = f"""
      proxy_set_header Accept-Encoding "";
      sub_filter '<head>' '<head>{META}';
      sub_filter_once on;"""
    return f"""  server {{
    listen {listen};
    location = /robots.txt {{
      default_type "text/plain; charset=utf-8";
      return 200 {robots_value};
    }}
    location / {{
      if ($cg_blocked) {{ return 403; }}
      proxy_pass http://origin;
{page_headers}{sub}
    }}
    location /public/ {{
      proxy_pass http://origin;
{page_headers}{sub}
    }}
  }}
"""


print(f"""worker_processes 2;
pid {tmp}/nginx-job.pid;
error_log {tmp}/nginx-job/error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/nginx-job; proxy_temp_path {tmp}/nginx-job; fastcgi_temp_path {tmp}/nginx-job;
  uwsgi_temp_path {tmp}/nginx-job; scgi_temp_path {tmp}/nginx-job;
  keepalive_requests 100000;
  upstream origin {{ server {origin}; keepalive 64; }}
  proxy_http_version 1.1;
  proxy_set_header Connection "";
  proxy_set_header Host $host;
  proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
  geo $dollar {{ default "$"; }}
{robots_vars}  map $http_user_agent $cg_blocked {{
    default 0;
{ua_map}  }}
{server(hdr_listen, False)}{server(inj_listen, True)}}}""")
