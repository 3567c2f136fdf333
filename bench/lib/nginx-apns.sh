# Sourced by the benchmarks: nginx as an HTTP/2 + TLS APNs stand-in on 127.0.0.1
# (bench/apns/nginx.conf), with a throwaway CA and server certificate in $RUN.
#   start_nginx_apns RUN PORT   # then https://localhost:PORT, trusting RUN/ca.pem;
#                               # and an OTLP/HTTP sink on http://127.0.0.1:PORT+1
#   stop_nginx_apns RUN
#   make_apns_certificates RUN  # only the certificates (for another stand-in)
#   h2load -n COUNT "${H2LOAD_APNS[@]}"   # the reference load, once nginx is started
start_nginx_apns() {
  local run=$1 port=$2 conf
  conf="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/apns/nginx.conf"
  if ! command -v nginx >/dev/null 2>&1; then apt-get update -qq && apt-get install -y -qq nginx >/dev/null; fi
  make_apns_certificates "$run"
  mkdir -p "$run"/tmp_body "$run"/tmp_proxy "$run"/tmp_fastcgi "$run"/tmp_uwsgi "$run"/tmp_scgi
  chmod 777 "$run"/tmp_*
  sed -e "s|@RUN@|$run|g" -e "s|@CERTS@|$run|g" -e "s|@PORT@|$port|g" -e "s|@OTLP_PORT@|$((port + 1))|g" "$conf" > "$run/nginx.conf"
  nginx -p "$run/" -c "$run/nginx.conf"
}

# A throwaway CA (RUN/ca.pem) and a certificate for localhost and 127.0.0.1 (RUN/server.pem, RUN/server.key).
make_apns_certificates() {
  local run=$1
  chmod 755 "$run"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$run/ca.key" -out "$run/ca.pem" \
    -days 1 -subj /CN=pushpipe-bench-ca 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$run/server.key" -out "$run/server.csr" \
    -subj /CN=localhost 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > "$run/ext.cnf"
  openssl x509 -req -in "$run/server.csr" -CA "$run/ca.pem" -CAkey "$run/ca.key" -CAcreateserial -out "$run/server.pem" \
    -days 1 -extfile "$run/ext.cnf" 2>/dev/null
  chmod 644 "$run"/*.pem "$run"/*.key
}

stop_nginx_apns() {
  [ -f "$1/nginx.pid" ] && kill "$(cat "$1/nginx.pid")" 2>/dev/null || true
}

# The reference load both APNs benchmarks measure against: a 200-byte alert (RUN/payload.json)
# on 1 connection with 100 concurrent streams, h2load's arguments but the count.
# h2load's rate for COUNT requests of the reference load; its summary lines go to stderr.
apns_h2load_rate() {
  local run=$1 count=$2
  h2load -n "$count" "${H2LOAD_APNS[@]}" > "$run/h2load.txt"
  grep -E '^finished in|^requests:|^status codes:' "$run/h2load.txt" >&2
  awk '/^finished in/ { gsub(",", "", $4); print $4 }' "$run/h2load.txt"
}

apns_reference_load() {
  local run=$1 port=$2
  python3 -c 'import json; body = {"aps": {"alert": {"title": "Benchmark", "body": "x" * 120}, "sound": "default", "badge": 1}, "n": 1}; s = json.dumps(body, separators=(",", ":")); print(s + " " * (200 - len(s)), end="")' > "$run/payload.json"
  H2LOAD_APNS=(-c 1 -m 100 -d "$run/payload.json" -H 'apns-topic: com.example.bench' -H 'apns-push-type: alert'
    -H 'apns-priority: 10' -H 'content-type: application/json' "https://127.0.0.1:$port/3/device/$(printf '%064d' 1)")
}
