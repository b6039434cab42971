#!/usr/bin/env bash
# Tests scripts/ensure-postgres.sh on a machine that is not Debian-managed:
# a PATH without pg_ctlcluster, with apt-get, sudo and su stubs that record
# being called and a psql that records its arguments before running the
# real one. Against a running server (the URL given, else the default) the
# script must print that URL and change nothing; against nothing it must fail
# with one line and still change nothing. make test runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

url="${1:-postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable}"
# Without client tools (a server in a container), the psql stub only records.
real_psql=$(command -v psql || echo true)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
calls="$tmp/calls"
: >"$calls"

# Only the tools the script may legitimately use, by symlink.
for tool in bash env sed id ls sort tail seq sleep pg_isready; do
  p=$(command -v "$tool") && ln -s "$p" "$tmp/bin/$tool"
done
for stub in apt-get apt sudo su pg_ctlcluster; do
  printf '#!%s\necho "%s $*" >>"%s"\nexit 0\n' "$(command -v bash)" "$stub" "$calls" >"$tmp/bin/$stub"
  chmod +x "$tmp/bin/$stub"
done
# pg_ctlcluster is what marks a Debian-managed server: take it away again.
rm "$tmp/bin/pg_ctlcluster"
printf '#!%s\necho "psql $*" >>"%s"\nexec "%s" "$@"\n' "$(command -v bash)" "$calls" "$real_psql" >"$tmp/bin/psql"
chmod +x "$tmp/bin/psql"

fail() { echo "ensure-postgres_test: FAIL: $*" >&2; exit 1; }
run_script() { env -i PATH="$tmp/bin" HOME="$tmp" "$@" bash scripts/ensure-postgres.sh; }

# 1. A running server is used as it is.
got=$(run_script TICKETD_TEST_DATABASE_URL="$url" 2>"$tmp/stderr") || fail "exit $? against a running server: $(cat "$tmp/stderr")"
[ "$got" = "$url" ] || fail "printed '$got', want '$url'"
[ ! -s "$tmp/stderr" ] || fail "said something against a running server: $(cat "$tmp/stderr")"

# 2. The same through the default URL when that is the server given.
if [ "$url" = "postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable" ]; then
  got=$(run_script 2>"$tmp/stderr") || fail "exit $? with the default URL: $(cat "$tmp/stderr")"
  [ "$got" = "$url" ] || fail "printed '$got' with the default URL"
fi
if grep -v "^psql $url -Atqc select 1\$" "$calls"; then
  fail "ran more than a login check against a running server (above)"
fi

# 3. Nothing answers: one line of advice, exit 1, nothing installed or
# started — even when installing is allowed, because the URL was given.
: >"$calls"
closed="postgres://postgres:postgres@127.0.0.1:9/postgres?sslmode=disable"
for install in "" 1; do
  if run_script TICKETD_TEST_DATABASE_URL="$closed" TICKETD_INSTALL_POSTGRES="$install" >"$tmp/stdout" 2>"$tmp/stderr"; then
    fail "succeeded with nothing answering"
  fi
  [ ! -s "$tmp/stdout" ] || fail "printed a URL with nothing answering: $(cat "$tmp/stdout")"
  [ "$(wc -l <"$tmp/stderr")" -eq 1 ] || fail "want one line of advice, got: $(cat "$tmp/stderr")"
  grep -q "no PostgreSQL answers" "$tmp/stderr" || fail "advice does not say what is wrong: $(cat "$tmp/stderr")"
  grep -q "macOS" "$tmp/stderr" || fail "advice does not cover macOS: $(cat "$tmp/stderr")"
done
[ ! -s "$calls" ] || fail "ran $(cat "$calls") with nothing answering"

echo "ensure-postgres_test: ok"
