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
# Every library ldd resolves outside the system's folders comes along.
ldd "$binary" | awk '$3 ~ /^\// && $3 !~ /^\/(usr\/)?lib/ {print $3}' | while read -r library; do
  install -m 0644 "$library" "$dest/"
done
echo "staged $(ls "$dest" | wc -l) files, $(du -sh "$dest" | cut -f1), in $dest"
