#!/usr/bin/env bash
# Installs the Debian packages the tasks run (and the tests' fixtures need), only where missing:
# poppler-utils renders scanned PDF pages for OCR, ffmpeg decodes audio, espeak-ng speaks the
# speech fixtures, the DejaVu fonts render the text fixtures, apertium and its language pairs
# translate, redis-server backs the Redis half of the store's tests (scripts/with-redis.sh).
set -euo pipefail
needed=()
command -v pdftoppm >/dev/null || needed+=(poppler-utils)
command -v ffmpeg >/dev/null || needed+=(ffmpeg)
command -v espeak-ng >/dev/null || needed+=(espeak-ng)
[ -d /usr/share/fonts/truetype/dejavu ] || needed+=(fonts-dejavu-core)
command -v redis-server >/dev/null || needed+=(redis-server)
for pair in apertium-eng-spa apertium-eng-cat apertium-spa-cat apertium-fr-es apertium-es-pt apertium-en-gl apertium-eo-en; do
  dpkg -s "$pair" >/dev/null 2>&1 || needed+=("$pair")
done
[ ${#needed[@]} -eq 0 ] && exit 0
echo "installing Debian packages: ${needed[*]}"
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${needed[@]}" >/dev/null
