# What the container checks share (.ci/check-container, .ci/check-systemd): podman, runc and
# debootstrap (Debian's, installed when missing), the engine as these machines can run it, and a
# Debian base image made without any registry. A check that sources it defines `skip MESSAGE`
# (it says why and exits 0): the one case where a check does not run is a machine with no
# container engine.
#   source .ci/lib/podman.sh; prepare_podman     (then: engine …, "${limits[@]}", $base)
prepare_podman() {
  if ! command -v podman >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc debootstrap >/dev/null; } \
      || skip "podman, runc and debootstrap could not be installed"
  fi
  engine info >/dev/null 2>&1 || skip "podman cannot run here: $(engine info 2>&1 | tail -n 1)"
  base=localhost/debian-base:bookworm
  if ! engine image exists "$base"; then
    local rootfs
    rootfs=$(mktemp -d /tmp/pushpipe-rootfs.XXXXXX)
    debootstrap --variant=minbase bookworm "$rootfs" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >/dev/null \
      || { rm -rf "$rootfs"; skip "debootstrap could not make a Debian base"; }
    tar -C "$rootfs" -c . | engine import - "$base" >/dev/null
    rm -rf "$rootfs"
  fi
}
# runc, not crun (which refuses this machine's hybrid cgroups); limits within the hard ones.
engine() { podman --runtime runc --cgroup-manager=cgroupfs "$@"; }
limits=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
# N free TCP ports on 127.0.0.1 (1 by default), each held until all are chosen: no two alike.
free_ports() {
  python3 -c '
import socket, sys
held = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in held: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in held])' "${1:-1}"
}
# The README's "Try it" requests to the app listener on PORT, each printing the answer's status,
# and whether alice's device is registered there (exit status). Bounded: a daemon that stopped
# answering fails the check instead of holding it.
readme_register() {
  curl -s -m 10 -o /dev/null -w '%{http_code}' -XPOST "127.0.0.1:$1/example/register" -H 'content-type: application/json' \
    -d '{"user_id": "alice", "device_token": "808605752f2f8d4c9ae1b3f4e9d2c7a1"}' || true
}
readme_event() {
  curl -s -m 10 -o /dev/null -w '%{http_code}' -XPOST "127.0.0.1:$1/example/events" -H 'authorization: Bearer dev-events-token' \
    -H 'content-type: application/json' -d '{"user": "alice", "title": "Hello", "message": "World", "urgent": true}' || true
}
registered() {
  curl -s -m 10 "127.0.0.1:$1/example/diagnostics/alice" \
    | python3 -c 'import json, sys; sys.exit(0 if json.load(sys.stdin).get("device_token_registered") else 1)'
}
