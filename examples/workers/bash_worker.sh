#!/usr/bin/env bash
# A warm worker in bash (TOML dialect): one event per line on stdin, one reply line on stdout.
# It blocks any event whose JSON mentions `rm -rf` and has no opinion on the rest.
#
# Replies are fixed strings: nothing from the request is ever copied into one, so there is no
# JSON to escape. Only replies go to stdout; diagnostics go to stderr.

if [[ ${TRIOHOOKS_WORKER-} != 1 ]]; then
  # Run one-shot (no `worker = true`), a reply line on stdout would read as "no opinion".
  echo "bash_worker.sh: configure this hook with worker = true" >&2
  exit 1
fi

while IFS= read -r line; do
  case $line in
    *'rm -rf'*) printf '%s\n' '{"exit":2,"stderr":"no rm -rf, please"}' ;;
    *) printf '%s\n' '{"exit":0}' ;;
  esac
done
# EOF on stdin: triohooks is closing or retiring this worker.
