#!/usr/bin/env bash
# Installs the Debian packages that are missing, for serving (`serve`) or also for the tests (`test`).
# Serving: poppler-utils renders scanned PDF pages for OCR, ffmpeg decodes audio, apertium and its
# language pairs translate. The tests add espeak-ng (it speaks the speech fixtures), the DejaVu
# fonts (they render the text fixtures), redis-server (the Redis half of the store's tests) and
# chromium (it renders the API reference in a test, and its screenshot for make docs).
set -euo pipefail
what=${1:-test}
needed=()
command -v pdftoppm >/dev/null || needed+=(poppler-utils)
command -v ffmpeg >/dev/null || needed+=(ffmpeg)
for pair in apertium-eng-spa apertium-eng-cat apertium-spa-cat apertium-fr-es apertium-es-pt apertium-en-gl apertium-eo-en; do
  dpkg -s "$pair" >/dev/null 2>&1 || needed+=("$pair")
done
if [ "$what" = test ]; then
  command -v espeak-ng >/dev/null || needed+=(espeak-ng)
  [ -d /usr/share/fonts/truetype/dejavu ] || needed+=(fonts-dejavu-core)
  command -v redis-server >/dev/null || needed+=(redis-server)
  command -v chromium >/dev/null || needed+=(chromium)
fi
[ ${#needed[@]} -eq 0 ] && exit 0
echo "==> Debian packages (apt-get, a minute or two): ${needed[*]}"
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${needed[@]}" >/dev/null
