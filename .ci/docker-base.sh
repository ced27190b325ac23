#!/usr/bin/env bash
# Builds a local Debian bookworm base image for the container test (Docker Hub is unreachable here).
# Test-only: the CA bundle copied in lets pip reach PyPI from inside `docker build` on this machine;
# the product image never gets it (users build FROM python:3.12-slim).
# Usage: .ci/docker-base.sh [IMAGE_NAME]   (prints the image name on its last line)
set -euo pipefail

NAME="${1:-evalgate-base:bookworm}"

log() { echo "docker-base: $*" >&2; }

ensure_tools() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v docker >/dev/null 2>&1 || missing+=(docker.io)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

ensure_dockerd() {
  if docker info >/dev/null 2>&1; then
    return
  fi
  log "starting dockerd in the background"
  nohup dockerd >/tmp/evalgate-dockerd.log 2>&1 &
  local tries=0
  until docker info >/dev/null 2>&1; do
    tries=$((tries + 1))
    if ((tries > 60)); then
      log "dockerd did not come up in 60 s; see /tmp/evalgate-dockerd.log"
      tail -20 /tmp/evalgate-dockerd.log >&2 || true
      exit 1
    fi
    sleep 1
  done
}

first_mirror() {
  # The first `URIs:` of this machine's deb822 sources: read, never hard-coded.
  awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources
}

build_base() {
  local mirror
  mirror="$(first_mirror)"
  if [[ -z "$mirror" ]]; then
    log "no URIs: line in /etc/apt/sources.list.d/debian.sources"
    exit 1
  fi
  ROOTFS="$(mktemp -d /tmp/evalgate-rootfs.XXXXXX)"
  trap 'rm -rf "$ROOTFS"' EXIT
  local dir="$ROOTFS"
  log "debootstrap bookworm from $mirror into $dir (about a minute)"
  debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$dir" "$mirror" >/tmp/evalgate-debootstrap.log 2>&1 || {
    tail -30 /tmp/evalgate-debootstrap.log >&2
    exit 1
  }
  cp /etc/ssl/certs/ca-certificates.crt "$dir/etc/ssl/certs/ca-certificates.crt"
  tar -C "$dir" -c . | docker import - "$NAME" >/dev/null
  log "imported $NAME"
}

ensure_tools
ensure_dockerd
if docker image inspect "$NAME" >/dev/null 2>&1; then
  log "reusing $NAME"
else
  build_base
fi
echo "$NAME"
