#!/usr/bin/env bash
# scripts/fresh-check.sh - proves that the README's two Quick start commands work on a fresh Debian 12.
#
#   bash scripts/fresh-check.sh          (as root, or through sudo; CI runs it from .ci/run)
#
# For each command of the README's "Quick start" block, taken from README.md as written:
#   1. a minimal Debian 12 root (debootstrap --variant=minbase bookworm), from the mirror the
#      machine's own apt sources name; the debootstrapped root is cached as a tarball under the
#      system temp folder and reused while younger than a day (nothing of the project is in it);
#   2. /proc, /dev, /sys and, when present, the CUDA toolkit (/usr/local/cuda, read-only) bound in;
#   3. a clone of this repository's HEAD at /root/yoloplan, and nothing built;
#   4. the command run there as root, with a clean environment; its wall time, result and last
#      line are printed, and its last 60 log lines when it fails.
# Each command gets its own fresh root, so each is proved to set itself up from nothing; the two
# roots share only apt's download folder. Everything made (mounts, roots, logs) is removed on
# success, on failure and on Ctrl-C. Exits 0 when every command passed.
#
# Environment: YP_FRESH_KEEP_LOGS=DIR copies each command's full log into DIR before cleanup.
set -uo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
say() { echo "fresh-check: $*"; }
die() { echo "fresh-check: $*" >&2; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "needs root (debootstrap, chroot, mount); run it as root"
  exec sudo -E bash "$0" "$@"
fi

# ---- what to run: the README's Quick start commands, exactly as written ----
mapfile -t commands < <(awk '
  /^## Quick start/ { q = 1; next }
  q && /^```/ { if (f) exit; f = 1; next }
  q && f { sub(/[ \t]+#.*$/, ""); if ($0 != "") print }' "$here/README.md")
[ "${#commands[@]}" -eq 2 ] ||
  die "README.md: expected two commands in the Quick start block, found ${#commands[@]}; fix the README"

# ---- the Debian mirror: the machine's own apt sources ----
# Prints the URI of the first enabled "deb" source that serves suite $1, one-line or deb822 format.
apt_source_uri() {
  local suite="$1"
  {
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk -v s="$suite" '$1 == "deb" {
        i = 2
        if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
        if ($(i + 1) == s) print $i }'
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -r "$f" ] || continue
      awk -v s="$suite" 'BEGIN { RS = ""; FS = "\n" } {
        types = uris = suites = ""; enabled = "yes"
        for (j = 1; j <= NF; j++) {
          if ($j ~ /^[ \t]*#/ || index($j, ":") == 0) continue
          key = tolower(substr($j, 1, index($j, ":") - 1)); val = substr($j, index($j, ":") + 1)
          gsub(/^[ \t]+|[ \t]+$/, "", val)
          if (key == "types") types = val; else if (key == "uris") uris = val
          else if (key == "suites") suites = val; else if (key == "enabled") enabled = tolower(val)
        }
        if (types !~ /(^|[ \t])deb([ \t]|$)/ || enabled == "no") next
        n = split(suites, ss, /[ \t]+/)
        for (k = 1; k <= n; k++) if (ss[k] == s) { split(uris, uu, /[ \t]+/); print uu[1] }
      }' "$f"
    done
  } | head -1
}
mirror="$(apt_source_uri bookworm)"
[ -n "$mirror" ] || die "no apt source of this machine serves 'bookworm'; add one to /etc/apt/sources.list(.d)"
security="$(apt_source_uri bookworm-security)"

if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap"
  { DEBIAN_FRONTEND=noninteractive apt-get update -q &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap; } >/dev/null ||
    die "apt-get could not install debootstrap"
fi

# ---- cleanup: processes, mounts, then files; on every exit ----
tmp="${TMPDIR:-/tmp}"
work="$(mktemp -d "$tmp/yoloplan-fresh.XXXXXX")" || die "cannot create a folder under $tmp"

# Mount points below folder $1, deepest first.
mounts_below() {
  awk -v w="$1/" 'index($5, w) == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

# Ends the processes whose root is folder $1 or below it, unmounts everything below it, and
# removes it. Refuses to remove it while anything stays mounted there: a bound host folder (the
# CUDA toolkit) must never be deleted through its mount point. 0, or 1.
teardown() {
  local dir="$1" p r m sig hit
  for sig in TERM KILL; do
    hit=0
    for p in /proc/[0-9]*; do
      r="$(readlink "$p/root" 2>/dev/null)" || continue
      case "$r" in "$dir" | "$dir"/*) kill -"$sig" "${p#/proc/}" 2>/dev/null && hit=1 ;; esac
    done
    [ "$sig" = TERM ] && [ "$hit" = 1 ] && sleep 1
  done
  while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done < <(mounts_below "$dir")
  if [ -n "$(mounts_below "$dir")" ]; then
    echo "fresh-check: could not unmount $(mounts_below "$dir" | tr '\n' ' '); left $dir in place" >&2
    return 1
  fi
  rm -rf --one-file-system "$dir"
}

bg="" # the command waited() runs now
cleanup() {
  local status=$?
  trap - EXIT INT TERM HUP
  [ -n "$bg" ] && kill -TERM "$bg" 2>/dev/null
  teardown "$work" || status=1
  exit "$status"
}
trap cleanup EXIT
trap 'echo "fresh-check: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Runs "$@" in the background and waits, so that a signal reaches the traps at once.
waited() { "$@" & bg=$!; wait "$bg"; }

# ---- the base root: debootstrap, or the cached tarball ----
cache_dir="$tmp/yoloplan-fresh-cache"
arch="$(dpkg --print-architecture)"
tarball="$cache_dir/bookworm-minbase-$arch.tar"
if [ -n "$(find "$tarball" -mmin -1440 2>/dev/null)" ]; then
  say "base root: cached $tarball (younger than a day)"
else
  say "base root: debootstrap --variant=minbase bookworm from $mirror"
  mkdir -p "$cache_dir" "$work/base"
  include=()
  case "$mirror" in https:*) include=(--include=ca-certificates) ;; esac
  t0=$SECONDS
  if ! waited debootstrap --variant=minbase "${include[@]}" bookworm "$work/base" "$mirror" >"$work/debootstrap.log" 2>&1; then
    tail -30 "$work/debootstrap.log" >&2
    die "debootstrap failed (log above)"
  fi
  waited tar -C "$work/base" -cf "$tarball.tmp.$$" . || die "cannot write $tarball"
  mv -f "$tarball.tmp.$$" "$tarball"
  rm -rf --one-file-system "$work/base"
  say "base root: made in $((SECONDS - t0)) s, cached as $tarball"
fi

# Makes the fresh root $1: the base, apt sources, DNS, mounts, and a clone of HEAD.
make_root() {
  local root="$1"
  mkdir -p "$root" && waited tar -C "$root" -xf "$tarball" || return 1
  {
    echo "deb $mirror bookworm main"
    echo "deb $mirror bookworm-updates main"
    [ -n "$security" ] && echo "deb $security bookworm-security main"
  } >"$root/etc/apt/sources.list"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  local src dst
  for src in /proc /dev /sys; do
    mount --bind "$src" "$root$src" && mount --make-private "$root$src" || return 1
  done
  mkdir -p "$work/apt-archives/partial" && mount --bind "$work/apt-archives" "$root/var/cache/apt/archives" || return 1
  if [ -d /usr/local/cuda ]; then
    dst="$root/usr/local/cuda"
    mkdir -p "$dst" && mount --bind "$(readlink -f /usr/local/cuda)" "$dst" &&
      mount --make-private "$dst" && mount -o remount,bind,ro "$dst" || return 1
  fi
  git clone -q --no-hardlinks "$here" "$root/root/yoloplan"
}

cuda_note="no CUDA toolkit on this machine"
[ -d /usr/local/cuda ] && cuda_note="CUDA toolkit bound read-only from /usr/local/cuda"
say "repository: $(git -C "$here" rev-parse --short HEAD) ($(git -C "$here" log -1 --format=%s | cut -c1-60)); $cuda_note"

failed=0
results=()
for i in "${!commands[@]}"; do
  cmd="${commands[$i]}"
  root="$work/root$i"
  log="$work/command$i.log"
  make_root "$root" || die "could not prepare the fresh root for '$cmd'"
  say "running '$cmd' in a fresh Debian 12 root"
  t0=$SECONDS
  waited chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /root/yoloplan && $cmd" >"$log" 2>&1
  rc=$?
  secs=$((SECONDS - t0))
  last="$(grep -v '^[[:space:]]*$' "$log" | tail -1)"
  if [ -n "${YP_FRESH_KEEP_LOGS:-}" ]; then
    mkdir -p "$YP_FRESH_KEEP_LOGS" && cp "$log" "$YP_FRESH_KEEP_LOGS/command$i.log"
  fi
  if [ "$rc" -eq 0 ]; then
    results+=("PASS  ${secs} s  $cmd  | last line: $last")
  else
    failed=1
    echo "---- last 60 lines of '$cmd' (exit $rc) ----"
    tail -60 "$log"
    echo "----"
    results+=("FAIL  ${secs} s  $cmd  (exit $rc) | last line: $last")
  fi
  # The next command starts from a fresh root; this one goes now.
  teardown "$root" || die "could not remove the fresh root of '$cmd'"
done

for r in "${results[@]}"; do say "$r"; done
if [ "$failed" -eq 0 ]; then
  say "PASS (both README commands on a fresh Debian 12 root)"
  exit 0
fi
say "FAIL"
exit 1
