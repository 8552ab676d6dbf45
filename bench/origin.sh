# Sourced by bench/paired-compare, bench/verify-compare and bench/instructions: the origin they
# share. `start_origin DIR` writes the pages and starts nginx (one worker,
# static files, keep-alive) on 127.0.0.1:$ORIGIN_PORT (default 38081, so that
# helpers running benchmarks side by side can each have one); `stop_origin DIR` stops it
# and waits until it has exited. The pages, in DIR/www:
#   small.html    1.5 KB, a head of a charset and a title (the default);
#   page.html     the load test's 1.5 KB page (scripts/load-test: also a
#                 viewport meta, a stylesheet, a script, `</head>`);
#   page20k.html  the load test's 20 KB page;
#   metas5.html   page.html with 5 robots metas in its head, for the audit
#                 and enforce rows (conflicts, extras, a crawler's meta).
ORIGIN_PORT=${ORIGIN_PORT:-38081}
start_origin() {
  local d=$1
  mkdir -p "$d/www" "$d/nginx"
  python3 - "$d/www" <<'PY'
import os, sys
www = sys.argv[1]
s = '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>An article</title>\n'
while len(s) < 1500:
    s += '<p>Operators publish robots.txt; crawlers are expected to read it, and <a href="/more">most do</a>.</p>\n'
open(os.path.join(www, "small.html"), "w").write(s + '</body></html>\n')
# The same bytes as scripts/load-test's pages.
head = ('<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>An article</title>\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n<link rel="stylesheet" href="/site.css">\n'
        '<script src="/app.js" defer></script>\n</head>\n<body>\n<article>\n')
metas = ('<meta name="robots" content="index, follow">\n<meta name="robots" content="noarchive">\n'
         '<meta name="googlebot" content="max-snippet:-1, max-image-preview:large">\n'
         '<meta name="bingbot" content="nosnippet">\n<meta name="gptbot" content="noai, noimageai">\n')
para = '<p>Operators publish robots.txt; crawlers are expected to read it, and <a href="/more">most do</a>.</p>\n'
def page(head, size):
    s = head
    while len(s) < size:
        s += para
    return s + '</article>\n</body>\n</html>\n'
open(os.path.join(www, "page.html"), "w").write(page(head, 1500))
open(os.path.join(www, "page20k.html"), "w").write(page(head, 20000))
open(os.path.join(www, "metas5.html"), "w").write(page(head.replace('<title>', metas + '<title>'), 1500))
PY
  chmod -R 755 "$d"
  cat > "$d/nginx/nginx.conf" <<NGINX
worker_processes 1;
pid $d/nginx.pid;
error_log $d/nginx/error.log;
events { worker_connections 1024; }
http { access_log off; types { text/html html; }
  client_body_temp_path $d/nginx; proxy_temp_path $d/nginx; fastcgi_temp_path $d/nginx; uwsgi_temp_path $d/nginx; scgi_temp_path $d/nginx;
  keepalive_requests 100000; server { listen 127.0.0.1:$ORIGIN_PORT; root $d/www; } }
NGINX
  nginx -c "$d/nginx/nginx.conf"
}

stop_origin() {
  local pid
  pid=$(cat "$1/nginx.pid" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null || true
  # Gone before returning, so that the next script can bind the port.
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}
