#!/usr/bin/env bash
# The image guard's evaluation set (make guard-eval): every photo and picture in five Debian
# packages, unpacked into .cache/fixtures/guard-images without installing them. None is sexual or
# gory: they measure false positives (people, animals, red flowers, a retina scan, wallpapers).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.cache/fixtures/guard-images
[ -f "$out/.complete" ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
packages=(python3-skimage opencv-doc mate-backgrounds gnome-backgrounds plasma-workspace-wallpapers)
echo "downloading ${packages[*]} (about 275 MB) for the image guard's evaluation set"
(cd "$work" && { apt-get download "${packages[@]}" >/dev/null 2>&1 || { apt-get update -qq && apt-get download "${packages[@]}" >/dev/null; }; })
for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$work/x"; done
rm -rf "$out" && mkdir -p "$out"
for dir in usr/lib/python3/dist-packages/skimage/data usr/share/doc/opencv-doc/examples/data usr/share/backgrounds usr/share/wallpapers; do
  find "$work/x/$dir" -type f \( -iname '*.png' -o -iname '*.jpg' -o -iname '*.jpeg' -o -iname '*.webp' \) -size +2k \
    | while read -r f; do cp "$f" "$out/$(echo "${f#"$work/x/"}" | tr '/' '_')"; done
done
touch "$out/.complete"
echo "$(find "$out" -type f ! -name .complete | wc -l) pictures in $out"
