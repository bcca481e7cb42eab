#!/usr/bin/env bash
# A private arm64 root with Debian's Vulkan loader and lavapipe (mesa-vulkan-drivers) and what they
# link, unpacked from the arm64 debs (dpkg -x), so that the adreno artifacts run in the tests
# under `qemu-aarch64 -L ROOT` (tests/integration/arm64_vulkan.sh) without a multiarch install,
# whose libc6:arm64 would clash with the cross toolchain's glibc in the other qemu tests.
# usage: arm64-vulkan-root.sh DEST   (about 60 MB of debs; does nothing when DEST is complete)
set -euo pipefail
[ $# -eq 1 ] || { sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
dest="$(mkdir -p "$1" && cd "$1" && pwd)"
[ -e "$dest/root/usr/share/vulkan/icd.d/lvp_icd.aarch64.json" ] && exit 0
work="$dest/apt"
rm -rf "$work" "$dest/root.tmp" && mkdir -p "$work/lists/partial" "$work/debs" "$dest/root.tmp"
touch "$work/status"
# apt with arm64 package lists of its own (the host's sources, another architecture, no dpkg state).
o=(-oAPT::Architecture=arm64 -oAPT::Architectures=arm64 "-oDir::State::Lists=$work/lists"
   "-oDir::State::Status=$work/status" -oDebug::NoLocking=1 -oAPT::Sandbox::User=root)
apt-get "${o[@]}" -q update >/dev/null
packages=$(apt-cache "${o[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances libvulkan1 mesa-vulkan-drivers | grep -v '^ ' | grep -v '^<' | sort -u)
(cd "$work/debs" && apt-get "${o[@]}" -q download $packages >/dev/null)
for d in "$work/debs"/*.deb; do
  case "$(basename "$d")" in  # tools the libraries' packages depend on, not needed to load them
    perl* | libperl* | python* | libpython* | dpkg_* | tar_* | install-info* | mailcap* | media-types* | mime-support*) continue ;;
  esac
  dpkg -x "$d" "$dest/root.tmp"
done
rm -rf "$dest/root" "$work" && mv "$dest/root.tmp" "$dest/root"
echo "ok: $dest/root"
