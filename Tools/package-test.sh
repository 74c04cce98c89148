#!/usr/bin/env bash
# Builds the Debian package and checks what is in it: the binary runs from the unpacked tree
# (help, init and get in a fresh data directory, the web chat served from the binary alone), the
# manual page renders with `man -l`, the bash completion loads and completes subcommands and
# options, the zsh completion parses, the units pass `systemd-analyze verify` (where it runs), and
# lintian reports no errors (where it is installed).
#
#   Tools/package-test.sh [--binary PATH]    (--binary: package that binary, no release build)
set -uo pipefail
cd "$(dirname "$0")/.."

# lintian and zsh, if missing and this is root (as the netns tests install nftables).
missing=()
command -v lintian >/dev/null || missing+=(lintian)
command -v zsh >/dev/null || missing+=(zsh)
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" -eq 0 ]; then
    echo "package test: installing ${missing[*]}" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >/dev/null 2>&1
fi

work=$(mktemp -d)
node_pid=""
cleanup() { [ -n "$node_pid" ] && kill "$node_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
failures=0
check() {  # check DESCRIPTION COMMAND...
    local what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what" >&2; failures=$((failures + 1)); fi
}

deb=$(Tools/package --output "$work/out" "$@") || { echo "FAIL Tools/package" >&2; exit 1; }
echo "package: $(basename "$deb") ($(du -h "$deb" | cut -f1))"
dpkg-deb --info "$deb" | sed -n 's/^ \(Depends\|Installed-Size\|Version\):/  \1:/p'
root=$work/root
dpkg-deb -x "$deb" "$root"
dpkg-deb -e "$deb" "$root/DEBIAN"
lanchat=$root/usr/bin/lanchat

expected_files() {
    local f missing=0
    for f in usr/bin/lanchat usr/share/man/man1/lanchat.1.gz usr/share/doc/lanchat/copyright \
             usr/share/doc/lanchat/changelog.gz usr/share/bash-completion/completions/lanchat \
             usr/share/zsh/vendor-completions/_lanchat usr/lib/systemd/system/lanchat.service \
             usr/lib/systemd/user/lanchat.service etc/lanchat/config DEBIAN/postinst DEBIAN/conffiles; do
        [ -e "$root/$f" ] || { echo "  missing $f" >&2; missing=1; }
    done
    return $missing
}
check "the package holds the binary, man page, completions, units, config, copyright, changelog" expected_files

# The binary runs from the unpacked tree, with no build directory in sight.
runs() {
    local out
    out=$(cd "$work" && "$lanchat" --help) && grep -q "SUBCOMMANDS:" <<<"$out" && grep -q "doctor" <<<"$out"
}
check "lanchat --help runs from the unpacked package" runs
init_get() {
    local data=$work/data id
    id=$(cd / && HOME=$work "$lanchat" init --data "$data" --name "Package Test") || return 1
    [ "$(HOME=$work "$lanchat" get --data "$data" "/users/$id/first_name")" = '"Package"' ]
}
check "lanchat init and get in a temporary data directory" init_get
web_chat() {
    local data=$work/data api="" i page
    (cd / && HOME=$work exec "$lanchat" run --data "$data" --no-discovery --listen 127.0.0.1:0 --api 127.0.0.1:0 2>"$work/run.log") &
    node_pid=$!
    for i in $(seq 1 50); do
        api=$(HOME=$work "$lanchat" status --data "$data" 2>/dev/null | sed -n 's|^api: *http://\([^ ]*\).*|\1|p')
        [ -n "$api" ] && break
        sleep 0.2
    done
    [ -n "$api" ] || { cat "$work/run.log" >&2; return 1; }
    # Whole bodies first: `curl | grep -q` fails under pipefail when grep stops reading early.
    local script headers
    page=$(curl -sf "http://$api/") && grep -q '<script src="/app.js" defer></script>' <<<"$page" &&
        script=$(curl -sf "http://$api/app.js") && grep -q "EventSource" <<<"$script" &&
        headers=$(curl -sfI "http://$api/app.css") && grep -qi "^content-type: text/css; charset=utf-8" <<<"$headers"
    local status=$?
    kill "$node_pid"; wait "$node_pid" 2>/dev/null; node_pid=""
    return $status
}
check "the web chat is served from the binary alone (page, script, styles)" web_chat

# The manual page renders, and lists every subcommand the help lists.
man_page() {
    local text sub
    text=$(MANWIDTH=80 man -l "$root/usr/share/man/man1/lanchat.1.gz" 2>"$work/man.err" | col -b) || return 1
    [ -s "$work/man.err" ] && { cat "$work/man.err" >&2; return 1; }
    for sub in $("$lanchat" --help | sed -n '/^SUBCOMMANDS:/,/^$/p' | awk 'NF>1 && $1 != "SUBCOMMANDS:" {print $1}'); do
        grep -q "^   $sub\$" <<<"$text" || { echo "  man page lacks $sub" >&2; return 1; }
    done
    grep -q "CONFIGURATION" <<<"$text"
}
check "man -l renders lanchat(1) with every subcommand" man_page

# The bash completion loads and completes.
bash_completion() {
    bash --norc --noprofile -c '
        source "$1" || exit 1
        complete -p lanchat | grep -q -- "-F _lanchat" || exit 1
        COMP_WORDS=(lanchat do); COMP_CWORD=1; _lanchat
        [ "${COMPREPLY[*]}" = "doctor" ] || { echo "  lanchat do<TAB>: ${COMPREPLY[*]}" >&2; exit 1; }
        COMP_WORDS=(lanchat ""); COMP_CWORD=1; _lanchat
        for sub in run status config doctor send; do
            [[ " ${COMPREPLY[*]} " == *" $sub "* ]] || { echo "  lanchat <TAB> lacks $sub" >&2; exit 1; }
        done
        COMP_WORDS=(lanchat run --disc); COMP_CWORD=2; _lanchat
        [ "${COMPREPLY[*]}" = "--discovery-port --discovery-interface" ] || { echo "  lanchat run --disc<TAB>: ${COMPREPLY[*]}" >&2; exit 1; }
        COMP_WORDS=(lanchat help con); COMP_CWORD=2; _lanchat
        [ "${COMPREPLY[*]}" = "config" ] || { echo "  lanchat help con<TAB>: ${COMPREPLY[*]}" >&2; exit 1; }
    ' _ "$root/usr/share/bash-completion/completions/lanchat"
}
check "bash completion loads (complete -p lanchat) and completes subcommands and options" bash_completion
zsh_completion() {
    if ! command -v zsh >/dev/null; then echo "  (zsh not installed: syntax not checked)"; return 0; fi
    zsh -n "$root/usr/share/zsh/vendor-completions/_lanchat"
}
check "zsh completion parses" zsh_completion

units() {
    if ! systemd-analyze --version >/dev/null 2>&1; then echo "  (systemd-analyze not available: units not verified)"; return 0; fi
    # verify looks for the units' executables on the real paths: point them at the unpacked
    # tree. It exits 0 on unknown keys and bad values too, so any line it prints is a failure.
    local dir=$work/units status=0 unit copy out
    mkdir -p "$dir"
    for unit in system/lanchat.service user/lanchat.service; do
        copy="$dir/${unit%%/*}-lanchat.service"
        sed "s|/usr/bin/lanchat|$lanchat|g" "$root/usr/lib/systemd/$unit" >"$copy"
        out=$(systemd-analyze verify --man=no "$copy" 2>&1)
        [ -z "$out" ] || { echo "  $unit: $out" >&2; status=1; }
    done
    return $status
}
check "systemd-analyze verify on the system and user units" units

lint() {
    if ! command -v lintian >/dev/null; then echo "  (lintian not installed: not run)"; return 0; fi
    lintian --tag-display-limit 0 "$deb" >"$work/lintian.txt" 2>&1
    sed 's/^/  lintian: /' "$work/lintian.txt"
    ! grep -q "^E:" "$work/lintian.txt"
}
check "lintian reports no errors" lint

if [ "$failures" -gt 0 ]; then echo "package test: $failures check(s) failed" >&2; exit 1; fi
echo "package test: all checks passed"
