#!/usr/bin/env bash
# Sample photos for the object-detection tests, from Debian's python3-skimage package (its data/
# folder), unpacked into .cache/fixtures/photos without installing the package.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.cache/fixtures/photos
photos=(astronaut.png coffee.png horse.png chelsea.png motorcycle_left.png)
missing=0
for p in "${photos[@]}"; do [ -f "$out/$p" ] || missing=1; done
[ "$missing" = 0 ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && { apt-get download python3-skimage >/dev/null 2>&1 || { apt-get update -qq && apt-get download python3-skimage >/dev/null; }; })
dpkg-deb -x "$work"/python3-skimage_*.deb "$work/x"
mkdir -p "$out"
for p in "${photos[@]}"; do cp "$work/x/usr/lib/python3/dist-packages/skimage/data/$p" "$out/"; done
echo "sample photos in $out (from Debian's python3-skimage)"
