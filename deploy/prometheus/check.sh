#!/usr/bin/env bash
# Checks the Prometheus files of this directory with promtool: the rules parse (check rules), every alert
# fires on the series that should fire it and stays silent on a healthy one (test rules, alerts_test.yml),
# and the scrape config with its rule files loads (check config). No Prometheus server is started.
#
# promtool comes from PATH, else from the cache below, else from Debian's `prometheus` package, downloaded
# (not installed: installing it would start a server) and unpacked into the cache.
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/ordersaga/promtool"

find_promtool() {
  if command -v promtool >/dev/null 2>&1; then
    command -v promtool
    return
  fi
  if [ -x "$cache/usr/bin/promtool" ]; then
    echo "$cache/usr/bin/promtool"
    return
  fi
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT # find_promtool runs in $(...): its own shell, which exits with it
  echo "check.sh: promtool not found: unpacking it from Debian's prometheus package into $cache" >&2
  # apt-get download drops root for the _apt user, who cannot write a directory of mktemp's.
  chmod 0755 "$tmp"
  mkdir -m 0777 "$tmp/deb"
  if ! (cd "$tmp/deb" && apt-get download prometheus >&2); then
    echo "check.sh: apt-get download failed: refreshing the package lists" >&2
    apt-get update >&2
    (cd "$tmp/deb" && apt-get download prometheus >&2)
  fi
  dpkg-deb -x "$tmp"/deb/prometheus_*.deb "$tmp/root"
  mkdir -p "$cache/usr/bin"
  cp "$tmp/root/usr/bin/promtool" "$cache/usr/bin/promtool.new"
  mv "$cache/usr/bin/promtool.new" "$cache/usr/bin/promtool"
  echo "$cache/usr/bin/promtool"
}

promtool="$(find_promtool)"
"$promtool" --version 2>&1 | sed -n 1p

cd "$dir"
"$promtool" check rules alerts.yml redis.yml
"$promtool" test rules alerts_test.yml
"$promtool" check config prometheus.yml
