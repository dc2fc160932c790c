#!/usr/bin/env bash
# Sample photos for the object-detection and image-guard tests, unpacked from Debian packages into
# .cache/fixtures/photos without installing them: python3-skimage's data/ folder (people, animals,
# objects, a retina scan) and a landscape from mate-backgrounds.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.cache/fixtures/photos
skimage=(astronaut.png coffee.png horse.png chelsea.png motorcycle_left.png retina.jpg rocket.jpg)
mate=(Dune.jpg)
missing=0
for p in "${skimage[@]}" "${mate[@]}"; do [ -f "$out/$p" ] || missing=1; done
[ "$missing" = 0 ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && { apt-get download python3-skimage mate-backgrounds >/dev/null 2>&1 \
  || { apt-get update -qq && apt-get download python3-skimage mate-backgrounds >/dev/null; }; })
for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$work/x"; done
mkdir -p "$out"
for p in "${skimage[@]}"; do cp "$work/x/usr/lib/python3/dist-packages/skimage/data/$p" "$out/"; done
for p in "${mate[@]}"; do cp "$work/x/usr/share/backgrounds/mate/nature/$p" "$out/"; done
echo "sample photos in $out (from Debian's python3-skimage and mate-backgrounds)"
