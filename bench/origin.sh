# Sourced by bench/paired-compare, bench/verify-compare and bench/instructions: the origin they
# share. `start_origin DIR` writes the 1.5 KB page (DIR/www/small.html) and
# starts nginx (one worker, static files, keep-alive) on 127.0.0.1:38081;
# `stop_origin DIR` stops it and waits until it has exited.
start_origin() {
  local d=$1
  mkdir -p "$d/www" "$d/nginx"
  python3 - "$d/www/small.html" <<'PY'
import sys
s = '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>An article</title>\n'
while len(s) < 1500:
    s += '<p>Operators publish robots.txt; crawlers are expected to read it, and <a href="/more">most do</a>.</p>\n'
open(sys.argv[1], "w").write(s + '</body></html>\n')
PY
  chmod -R 755 "$d"
  cat > "$d/nginx/nginx.conf" <<NGINX
worker_processes 1;
pid $d/nginx.pid;
error_log $d/nginx/error.log;
events { worker_connections 1024; }
http { access_log off; types { text/html html; }
  client_body_temp_path $d/nginx; proxy_temp_path $d/nginx; fastcgi_temp_path $d/nginx; uwsgi_temp_path $d/nginx; scgi_temp_path $d/nginx;
  keepalive_requests 100000; server { listen 127.0.0.1:38081; root $d/www; } }
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
