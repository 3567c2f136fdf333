#!/usr/bin/env bash
# Stages a pushpipe binary built on this machine for the Containerfile's `prebuilt` target: the
# binary, stripped, and the Swift runtime libraries it links (the toolchain's, not Debian's), in
# DEST (default dist/prebuilt, inside the build context).
#   bash contrib/container/stage-prebuilt.sh .build/release/pushpipe [DEST]
set -euo pipefail
binary=${1:?usage: stage-prebuilt.sh BINARY [DEST]}
dest=${2:-dist/prebuilt}
rm -rf "$dest"
mkdir -p "$dest"
install -m 0755 "$binary" "$dest/pushpipe"
strip "$dest/pushpipe"
# The toolchain's runtime libraries the binary links come along (wherever the toolchain is
# installed, /usr included); the system's (glibc, libstdc++, sqlite, jemalloc) are the image's.
# The binary needs a glibc no newer than the image's: build on Debian bookworm or older.
swift=$(command -v swiftc || command -v swift || true)
[ -n "$swift" ] || { echo "stage-prebuilt: no Swift toolchain on PATH"; exit 1; }
runtime=$(realpath "$(dirname "$(realpath "$swift")")/../lib/swift/linux")
ldd "$binary" | awk '$3 ~ /^\// {print $3}' | while read -r library; do
  case "$(realpath "$library")" in "$runtime"/*) install -m 0644 "$library" "$dest/" ;; esac
done
echo "staged $(ls "$dest" | wc -l) files, $(du -sh "$dest" | cut -f1), in $dest"
